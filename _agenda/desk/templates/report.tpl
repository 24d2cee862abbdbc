<h1>{{t('report_title')}}</h1>
<form method="get" action="/desk/report" class="inline">
  <label>{{t('from')}} <input name="from" value="{{format_date(first)}}" size="10"></label>
  <label>{{t('to')}} <input name="to" value="{{format_date(last)}}" size="10"></label>
  <button type="submit">{{t('show')}}</button>
</form>
<section class="chart">
  <img src="{{charts['filled']}}" alt="{{t('chart_filled')}}" width="640" height="300">
  <table>
    <thead><tr><th>{{t('doctor')}}</th><th>{{t('offered')}}</th><th>{{t('booked_count')}}</th><th>{{t('free_count')}}</th><th>%</th><th>{{t('no_shows')}}</th><th>{{t('late_cancels')}}</th><th>{{t('offered_minutes')}}</th><th>{{t('booked_minutes')}}</th></tr></thead>
    <tbody>
    % for d in report['doctors']:
    % c = d['totals']
    <tr><td>{{d['name']}}</td><td>{{c['offered']}}</td><td>{{c['booked']}}</td><td>{{c['free']}}</td><td>{{c['filled']}}</td><td>{{c['no_shows']}}</td><td>{{c['late_cancels']}}</td><td>{{c['offered_minutes']}}</td><td>{{c['booked_minutes']}}</td></tr>
    % end
    </tbody>
  </table>
</section>
<h2>{{t('report_types')}}</h2>
<table class="report-types">
  <thead><tr><th>{{t('visit_type')}}</th><th>{{t('visits')}}</th><th>{{t('booked_minutes')}}</th></tr></thead>
  <tbody>
  % for kind in report['types']:
  <tr><td>{{kind['name']}}</td><td>{{kind['visits']}}</td><td>{{kind['minutes']}}</td></tr>
  % end
  </tbody>
</table>
<h2>{{t('report_weeks')}}</h2>
<table class="report-weeks">
  <thead><tr><th>{{t('doctor')}}</th>
  % for monday in report['weeks']:
  <th>{{monday.strftime('%d/%m')}}</th>
  % end
  </tr></thead>
  <tbody>
  % for d in report['doctors']:
  <tr><td>{{d['name']}}</td>
  % for monday in report['weeks']:
  % c = d['weeks'].get(monday)
  <td>{{('%d/%d' % (c['booked'], c['offered'])) if c else '—'}}</td>
  % end
  </tr>
  % end
  </tbody>
</table>
% for name, rows, keys in (('reminders', report['reminders'], ('confirmed', 'declined', 'unanswered', 'released')), ('sources', report['sources'], ('agent', 'desk'))):
<section class="chart">
  <img src="{{charts[name]}}" alt="{{t('chart_' + name)}}" width="640" height="300">
  <table>
    <thead><tr><th>{{t('week')}}</th>
    % for key in keys:
    <th>{{t('reminder_' + key) if name == 'reminders' else (t('by_agent') if key == 'agent' else t('by_desk'))}}</th>
    % end
    </tr></thead>
    <tbody>
    % for monday in report['weeks']:
    <tr><td>{{monday.strftime('%d/%m/%Y')}}</td>
    % for key in keys:
    <td>{{rows[monday][key]}}</td>
    % end
    </tr>
    % end
    </tbody>
  </table>
</section>
% end
<section class="chart">
  <img src="{{charts['lead']}}" alt="{{t('chart_lead')}}" width="640" height="300">
  <table>
    <thead><tr><th>{{t('chart_lead')}}</th><th>{{t('appointments')}}</th></tr></thead>
    <tbody>
    % for bucket, count in report['lead'].items():
    <tr><td>{{t('lead_' + bucket)}}</td><td>{{count}}</td></tr>
    % end
    </tbody>
  </table>
</section>
