<h1>{{t('kept_title')}}</h1>
<p>{{t('kept_hint')}}</p>
<dl>
% for label, words in shown:
  <dt>{{label}}</dt><dd>{{words}}</dd>
% end
</dl>
<form method="post" action="{{path}}" autocomplete="off">
  <input type="hidden" name="csrf" value="{{desk['csrf']}}">
  % for name, value in fields:
  <input type="hidden" name="{{name}}" value="{{value}}">
  % end
  <button type="submit">{{t('kept_send')}}</button> <a href="/desk/day">{{t('kept_discard')}}</a>
</form>
