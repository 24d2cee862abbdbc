<h1>{{t('access_title', patient=patient['full_name'] or '')}}</h1>
<p>{{t('access_hint')}} <a href="/desk/patients/{{patient['id']}}">{{t('patient')}}</a></p>
% if not readers:
<p>{{t('none')}}</p>
% else:
<table class="access">
  <thead><tr><th>{{t('reader')}}</th><th>{{t('what')}}</th><th>{{t('days_read')}}</th><th>{{t('reads')}}</th><th>{{t('refused_reads')}}</th><th>{{t('first_read')}}</th><th>{{t('last_read')}}</th></tr></thead>
  <tbody>
  % for r in readers:
    <tr><td><a href="/desk/patients/{{patient['id']}}/access?{{urlencode({'reader': r['reader']})}}">{{r['reader']}}</a></td><td>{{', '.join(t('kind_' + kind) for kind in r['kinds'])}}</td><td>{{r['days']}}</td><td>{{r['reads']}}</td><td>{{r['refused']}}</td><td>{{when(r['first'])}}</td><td>{{when(r['last'])}}</td></tr>
  % end
  </tbody>
</table>
% end
% if days is not None:
<h2 id="detail">{{t('reader_days', reader=reader)}}</h2>
<table class="access">
  <thead><tr><th>{{t('first_read')}}</th><th>{{t('last_read')}}</th><th>{{t('what')}}</th><th>{{t('reads')}}</th><th>{{t('status')}}</th></tr></thead>
  <tbody>
  % for r in days:
    <tr><td>{{when(r['first'])}}</td><td>{{when(r['last'])}}</td><td>{{t('kind_' + r['kind'])}}</td><td>{{r['reads']}}</td><td>{{t('allowed') if r['allowed'] else t('refused')}}</td></tr>
  % end
  </tbody>
</table>
% end
