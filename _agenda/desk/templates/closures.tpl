<h1>{{t('closures')}}</h1>
% if error:
<p class="error" role="alert">{{error}}</p>
% end
<table>
  <thead><tr><th>{{t('doctor')}}</th><th>{{t('center')}}</th><th>{{t('from')}}</th><th>{{t('to')}}</th><th>{{t('hours')}}</th><th>{{t('reason')}}</th><th></th></tr></thead>
  <tbody>
  % for c in closures:
  <tr>
    <td>{{c['doctor_name'] or t('everyone')}}</td><td>{{center_names.get(c['center_id'], c['center_id']) if c['center_id'] else t('all_centers')}}</td>
    <td>{{format_date(c['date_from'])}}</td><td>{{format_date(c['date_to'])}}</td>
    <td>{{(c['start_time'] + '-' + c['end_time']) if c['start_time'] else ''}}</td><td>{{c['reason']}}</td>
    <td><a href="/desk/closures/{{c['id']}}/remove">{{t('remove')}}</a></td>
  </tr>
  % end
  </tbody>
</table>
<h2>{{t('add_closure')}}</h2>
% if covered:
<div class="warning" role="alert">
  <p>{{t('covers')}}</p>
  <ul>
  % for a in covered:
    <li>{{format_date(a['date'])}} {{a['start']}} · {{a['doctor_name']}} · {{a['patient_name']}} · <span class="phone">{{dialled(a['phone'])}}</span></li>
  % end
  </ul>
</div>
% end
<form method="post" action="/desk/closures" class="grid">
  <input type="hidden" name="csrf" value="{{desk['csrf']}}">
  % if covered:
  <input type="hidden" name="confirmed" value="1">
  % end
  <label>{{t('doctor')}}
    <select name="doctorId">
      <option value="">{{t('everyone')}}</option>
      % for d in doctors:
      <option value="{{d['id']}}" {{'selected' if d['id'] == typed['doctorId'] else ''}}>{{d['name']}}</option>
      % end
    </select>
  </label>
  <label>{{t('center')}}
    <select name="centerId">
      <option value="">{{t('all_centers')}}</option>
      % for c in centers:
      <option value="{{c['id']}}" {{'selected' if c['id'] == typed['centerId'] else ''}}>{{c['name']}}</option>
      % end
    </select>
  </label>
  <label>{{t('from')}} <input name="dateFrom" value="{{typed['dateFrom']}}" placeholder="DD/MM/AAAA" required></label>
  <label>{{t('to')}} <input name="dateTo" value="{{typed['dateTo']}}" placeholder="DD/MM/AAAA"></label>
  <label>{{t('hours_from')}} <input name="start" value="{{typed['start']}}" placeholder="HH:MM"></label>
  <label>{{t('hours_to')}} <input name="end" value="{{typed['end']}}" placeholder="HH:MM"></label>
  <label>{{t('reason')}} <input name="reason" value="{{typed['reason']}}"></label>
  <button type="submit">{{t('save_anyway') if covered else t('add_closure')}}</button>
</form>
