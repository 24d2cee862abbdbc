<section class="narrow">
<h1>{{t('app')}}</h1>
% if error:
<p class="error" role="alert">{{error}}</p>
% end
% if kept:
<p class="warning">{{t('kept_notice')}}</p>
% end
<form method="post" action="/desk/login">
  <input type="hidden" name="csrf" value="{{login_token}}">
  % if kept:
  <input type="hidden" name="kept" value="{{kept}}">
  % end
  <label>{{t('name')}} <input name="name" value="{{name}}" autocomplete="username" required autofocus></label>
  <label>{{t('password')}} <input name="password" type="password" autocomplete="current-password" required></label>
  <button type="submit">{{t('login')}}</button>
</form>
</section>
