<section class="card">
<h1>{{heading}}</h1>
% if name:
<p>{{t('card_for', name=name)}}</p>
% end
<dl>
  % for label, value in lines:
  <dt>{{label}}</dt><dd>{{value}}</dd>
  % end
</dl>
<p>{{t('card_scan')}}</p>
<img src="{{qr}}" alt="{{t('card_qr')}}" width="220" height="220">
<p class="address">{{address}}</p>
% if phone:
<p>{{t('mail_call', phone=phone)}}</p>
% end
% if not configured:
<p class="warning no-print">{{t('card_no_public_url')}}</p>
% end
</section>
