{{!head}}
<h1>{{t('web_step_time')}}</h1>
{{!chosen}}
% if error:
<p class="error" role="alert" id="hueco-error">{{t(error)}}</p>
% end
<p class="week">{{t('web_week', first=first, last=last)}}</p>
<nav class="weeks" aria-label="{{t('web_weeks')}}">
% if before:
<a class="back" href="{{before}}">{{t('web_previous_week')}}</a>
% end
% if after:
<a class="back next" href="{{after}}">{{t('web_next_week')}}</a>
% end
</nav>
% if days:
<form method="post" action="/reservar/datos">
% for name, value in hidden.items():
<input type="hidden" name="{{name}}" value="{{value}}">
% end
% for day, times in days:
<fieldset{{!' aria-describedby="hueco-error"' if error else ''}}><legend>{{day}}</legend>
% for who in dict.fromkeys(doctor for value, time, doctor in times):
% if who:
<fieldset class="doctor"><legend>{{who}}</legend>
% end
% for value, time, doctor in times:
% if doctor == who:
<label class="choice time"><input type="radio" name="hueco" value="{{value}}" required> {{time}}</label>
% end
% end
% if who:
</fieldset>
% end
% end
</fieldset>
% end
<div class="go"><button type="submit">{{t('web_continue')}}</button></div>
</form>
% else:
<p>{{t('web_no_times')}}</p>
% end
% if back:
<p><a class="back" href="{{back}}">{{t('web_back')}}</a></p>
% end
</main></body></html>
