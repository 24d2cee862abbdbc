<section class="card">
<h1>{{clinic_name or t('app')}}</h1>
<p>{{t('card_for', name=name or '')}}</p>
<dl>
  <dt>{{t('mail_when')}}</dt><dd>{{t('weekdays')[weekday(visit['date'])]}} {{format_date(visit['date'])}}</dd>
  <dt>{{t('mail_at')}}</dt><dd>{{visit['time']}}</dd>
  % if visit['center_name']:
  <dt>{{t('mail_where')}}</dt><dd>{{visit['center_name']}}</dd>
  % end
  % if shows == 'doctor':
  <dt>{{t('mail_doctor')}}</dt><dd>{{visit['doctor_name']}}</dd>
  % end
</dl>
<p>{{t('card_scan')}}</p>
<img src="{{qr}}" alt="{{t('card_qr')}}" width="220" height="220">
<p class="address">{{address}}</p>
% if not configured:
<p class="warning no-print">{{t('card_no_public_url')}}</p>
% end
</section>
