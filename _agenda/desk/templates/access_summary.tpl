<h1>{{t('access_summary_title', days=days)}}</h1>
<p>{{t('access_summary_hint')}}</p>
<h2>{{t('by_reader')}}</h2>
<table class="access">
  <thead><tr><th>{{t('reader')}}</th><th>{{t('patients_read')}}</th><th>{{t('reads')}}</th><th>{{t('refused_reads')}}</th><th>{{t('last_read')}}</th></tr></thead>
  <tbody>
  % for r in summary['by_reader']:
    <tr><td>{{r['reader']}}</td><td>{{r['patients']}}</td><td>{{r['reads']}}</td><td>{{r['refused']}}</td><td>{{when(r['last'])}}</td></tr>
  % end
  </tbody>
</table>
<h2>{{t('by_patient')}}</h2>
<table class="access">
  <thead><tr><th>{{t('patient_number')}}</th><th>{{t('readers_count')}}</th><th>{{t('reads')}}</th><th>{{t('refused_reads')}}</th><th>{{t('last_read')}}</th></tr></thead>
  <tbody>
  % for r in summary['by_patient']:
    <tr><td><a href="/desk/patients/{{r['patient_id']}}/access">{{r['patient_id']}}</a></td><td>{{r['readers']}}</td><td>{{r['reads']}}</td><td>{{r['refused']}}</td><td>{{when(r['last'])}}</td></tr>
  % end
  </tbody>
</table>
