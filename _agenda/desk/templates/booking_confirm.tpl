{{!head}}
<h1>{{t('web_confirm_title')}}</h1>
<p>{{t('web_confirm_ask')}}</p>
<dl>
% for label, value in lines:
<dt>{{label}}</dt><dd>{{value}}</dd>
% end
</dl>
<form method="post" action="/reservar/confirmar/{{token}}"><input type="hidden" name="idioma" value="{{lang}}">
<button type="submit">{{t('web_confirm_button')}}</button></form>
</main></body></html>
