{{!head}}
<h1>{{t('link_title')}} · {{clinic_name}}</h1>
% if done:
<p class="done" role="status">{{t(done)}}</p>
% end
% if error:
<p class="error" role="alert">{{t(error, hours=hours)}}</p>
% end
<p>{{t('mail_hello', name=name) if name else t('mail_hello_plain')}}</p>
<dl>
% for label, value in lines:
<dt>{{label}}</dt><dd>{{value}}</dd>
% end
</dl>
% if appointment['to_call']:
<p>{{t('link_to_call')}}</p>
% else:
% if appointment['status'] != 'confirmed':
<form method="post" action="/cita/{{token}}/confirmar"><input type="hidden" name="csrf" value="{{csrf}}">
<button type="submit">{{t('link_confirm')}}</button></form>
% end
% if late:
<p>{{t('link_late', hours=hours)}}</p>
% else:
<h2>{{t('link_move')}}</h2>
% days, more = moves
% if days:
<form method="post" action="/cita/{{token}}/cambiar"><input type="hidden" name="csrf" value="{{csrf}}">
<p>{{t('link_move_to')}}</p>
% for day, times in days:
<fieldset><legend>{{day}}</legend>
% for value, time in times:
<label class="choice"><input type="radio" name="slot" value="{{value}}" required> {{time}}</label>
% end
</fieldset>
% end
<button type="submit">{{t('link_move')}}</button></form>
% if more:
<p><a class="back" href="/cita/{{token}}?desde={{more}}">{{t('link_more_days')}}</a></p>
% end
% else:
<p>{{t('link_no_other')}}</p>
% end
<h2>{{t('link_cancel')}}</h2>
<form method="post" action="/cita/{{token}}/anular"><input type="hidden" name="csrf" value="{{csrf}}">
<button type="submit" class="danger">{{t('link_cancel')}}</button></form>
% end
% end
<p class="help">{{!help}}</p>
</main></body></html>
