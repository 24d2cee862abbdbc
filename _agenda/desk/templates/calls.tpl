<h1>{{t('calls_title')}}</h1>
<p>{{t('calls_hint')}}</p>
% if not appointments:
<p>{{t('none')}}</p>
% else:
<table>
  <thead><tr><th>{{t('date')}}</th><th>{{t('doctor')}}</th><th>{{t('patient')}}</th><th>{{t('phone')}}</th><th>{{t('reason')}}</th></tr></thead>
  <tbody>
  % for a in appointments:
  <tr><td><a href="/desk/appointments/{{a['id']}}">{{format_date(a['date'])}} {{a['start']}}</a></td><td>{{a['doctor_name']}}</td>
    <td>{{a['patient_name']}}</td><td><span class="phone">{{dialled(a['phone'])}}</span></td><td>{{a['reason'] or ''}}</td></tr>
  % end
  </tbody>
</table>
% end
% if overlaps:
<h2 id="overlaps">{{t('overlaps_title', count=overlap_count)}}</h2>
<p>{{t('overlaps_hint')}}</p>
<ul class="overlaps">
  % for first, date, time, doctor, second, other_time, other_doctor in overlaps:
  <li>{{format_date(date)}}: <a href="/desk/appointments/{{first}}">{{time}} · {{doctor}}</a> ↔ <a href="/desk/appointments/{{second}}">{{other_time}} · {{other_doctor}}</a></li>
  % end
</ul>
% end
