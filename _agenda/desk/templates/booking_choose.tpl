{{!head}}
<h1>{{t('web_step_' + step)}}</h1>
% if wrong:
<p class="error" role="alert">{{t('web_bad_choice')}}</p>
% end
{{!chosen}}
<ul class="options">
% for name, href, minutes in links:
<li><a class="option" href="{{href}}">{{name}} {{!'<span class="minutes">' + t('web_minutes', minutes=minutes) + '</span>' if minutes else ''}}</a></li>
% end
</ul>
% if back:
<p><a class="back" href="{{back}}">{{t('web_back')}}</a></p>
% end
</main></body></html>
