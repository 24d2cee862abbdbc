{{!head}}
<h1>{{t('web_step_details')}}</h1>
% if fields or general:
<div class="error" role="alert" id="errores" tabindex="-1"><h2>{{t('web_errors')}}</h2><ul>
% for name, words in fields.items():
<li><a href="#{{name}}">{{words}}</a></li>
% end
% if general:
<li>{{general}}</li>
% end
</ul></div>
% end
{{!chosen}}
<p class="when">{{t('web_when', day=when[0], time=when[1])}}</p>
<form method="post" action="/reservar/enviar" novalidate>
% for name, value in hidden.items():
<input type="hidden" name="{{name}}" value="{{value}}">
% end
% for name, label, kind, complete, hint in inputs:
% described = ' '.join(([name + '-hint'] if hint else []) + ([name + '-error'] if name in fields else []))
<div class="field{{' wrong' if name in fields else ''}}">
<label for="{{name}}">{{t(label)}}</label>
% if hint:
<p class="hint" id="{{name}}-hint">{{t(hint)}}</p>
% end
% if name in fields:
<p class="field-error" id="{{name}}-error">{{fields[name]}}</p>
% end
<input id="{{name}}" name="{{name}}" type="{{kind}}" autocomplete="{{complete}}" value="{{typed[name]}}" required aria-required="true"{{!' aria-invalid="true"' if name in fields else ''}}{{!' aria-describedby="' + described + '"' if described else ''}}>
</div>
% if name == 'nif':
<div class="field check"><input id="menor" name="menor" type="checkbox" value="1"{{!' checked' if child else ''}}><label for="menor">{{t('web_child')}}</label></div>
% end
% end
<div class="field{{' wrong' if 'aseguradora' in fields else ''}}">
<label for="aseguradora">{{t('web_insurance')}}</label>
% if 'aseguradora' in fields:
<p class="field-error" id="aseguradora-error">{{fields['aseguradora']}}</p>
% end
<select id="aseguradora" name="aseguradora"{{!' aria-invalid="true" aria-describedby="aseguradora-error"' if 'aseguradora' in fields else ''}}>
% if none:
<option value="">{{t('web_no_insurance')}}</option>
% end
% for value, name in insurances:
<option value="{{value}}"{{!' selected' if typed['aseguradora'] == value else ''}}>{{name}}</option>
% end
</select></div>
<h2>{{t('web_privacy_title')}}</h2>
<div class="privacy" id="privacidad-texto">{{privacy}}</div>
<div class="field check{{' wrong' if 'privacidad' in fields else ''}}">
% if 'privacidad' in fields:
<p class="field-error" id="privacidad-error">{{fields['privacidad']}}</p>
% end
<input id="privacidad" name="privacidad" type="checkbox" value="1" required aria-required="true"{{!' checked' if accepted else ''}} aria-describedby="privacidad-texto{{' privacidad-error' if 'privacidad' in fields else ''}}"{{!' aria-invalid="true"' if 'privacidad' in fields else ''}}><label for="privacidad">{{t('web_privacy_accept')}}</label></div>
<button type="submit">{{t('web_book')}}</button>
</form>
<p><a class="back" href="{{back}}">{{t('web_back')}}</a></p>
</main></body></html>
