{{!head}}
<h1>{{t('link_title')}}</h1>
<p role="status">{{t(key)}}</p>
% if back:
<p><a class="back" href="/cita/{{back}}">{{t('link_back_to')}}</a></p>
% end
% if help:
<p class="help">{{!help}}</p>
% end
</main></body></html>
