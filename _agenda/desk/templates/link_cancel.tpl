{{!head}}
<h1>{{t('link_cancel')}}</h1>
<p>{{t('link_cancel_ask', date=when, time=time)}}</p>
<p>{{t('link_cancel_sure')}}</p>
<form method="post" action="/cita/{{token}}/anular"><input type="hidden" name="csrf" value="{{csrf}}">
<input type="hidden" name="seguro" value="1">
<button type="submit" class="danger">{{t('link_cancel_yes')}}</button></form>
<p><a class="back" href="/cita/{{token}}">{{t('link_back')}}</a></p>
</main></body></html>
