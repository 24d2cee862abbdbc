<h1>{{patient['name']}} {{patient['surname'] or ''}}</h1>
<dl>
  <dt>{{t('nif')}}</dt><dd>{{patient['nif']}}</dd>
  <dt>{{t('phone')}}</dt><dd>{{dialled(patient['phone'])}}</dd>
  <dt>{{t('birth')}}</dt><dd>{{format_date(patient['birth_date']) if patient['birth_date'] else ''}}</dd>
</dl>
<h2>{{t('appointments')}}</h2>
% if not patient['appointments']:
<p>{{t('none')}}</p>
% end
<ul>
% for a in patient['appointments']:
  <li><a href="/desk/appointments/{{a['id']}}">{{format_date(a['date'])}} {{a['start']}}</a> · {{a['doctor_name']}} · {{t(a['status'])}} · {{a['reason'] or ''}}</li>
% end
</ul>
% if desk['role'] == 'admin':
<p class="admin">
  <a href="/desk/patients/{{patient['id']}}/access">{{t('access_link')}}</a> ·
  <a href="/desk/patients/{{patient['id']}}/copy">{{t('copy_html')}}</a> ·
  <a href="/desk/patients/{{patient['id']}}/copy?format=json">{{t('copy_json')}}</a> ·
  <a href="/desk/patients/{{patient['id']}}/erase">{{t('erase')}}</a>
</p>
% end
