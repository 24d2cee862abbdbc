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
    <td>{{a['patient_name']}}</td><td>{{dialled(a['phone'])}}</td><td>{{a['reason'] or ''}}</td></tr>
  % end
  </tbody>
</table>
% end
