<h1>{{patient['name']}} {{patient['surname'] or ''}}</h1>
<dl>
  <dt>{{t('nif')}}</dt><dd>{{patient['nif']}}</dd>
  <dt>{{t('phone')}}</dt><dd>{{dialled(patient['phone'])}}</dd>
  <dt>{{t('birth')}}</dt><dd>{{patient['birthDate'] or ''}}</dd>
</dl>
<h2>{{t('appointments')}}</h2>
% if not patient['appointments']:
<p>{{t('none')}}</p>
% end
<ul>
% for a in patient['appointments']:
  <li><a href="/desk/appointments/{{a['appointmentId']}}">{{a['date']}} {{a['time']}}</a> · {{a['doctorName']}} · {{t(a['extraData']['status'])}} · {{a['reason'] or ''}}</li>
% end
</ul>
