{{!head}}
<h1>{{t('link_stop_title')}}</h1>
% if stopped:
<p class="done" role="status">{{t('link_stopped')}}</p>
% else:
<p>{{t('link_stop_ask')}}</p>
<form method="post" action="/cita/baja/{{token}}"><button type="submit">{{t('link_stop_button')}}</button></form>
% end
</main></body></html>
