<h1>{{t('access_title', patient=f"{patient['name']} {patient['surname'] or ''}".strip())}}</h1>
<p>{{t('access_hint')}} <a href="/desk/patients/{{patient['id']}}">{{t('patient')}}</a></p>
% if not records:
<p>{{t('none')}}</p>
% else:
<table class="access">
  <thead><tr><th>{{t('date')}}</th><th>{{t('reader')}}</th><th>{{t('what')}}</th><th>{{t('shown_with')}}</th><th>{{t('status')}}</th></tr></thead>
  <tbody>
  % for r in records:
    <tr><td>{{r['when']}}</td><td>{{r['reader']}}</td><td>{{t('kind_' + r['kind'])}}</td><td>{{r['shown'] - 1}}</td><td>{{t('allowed') if r['allowed'] else t('refused')}}</td></tr>
  % end
  </tbody>
</table>
% end
