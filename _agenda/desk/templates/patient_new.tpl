<h1>{{t('new_patient')}}</h1>
% if error:
<p class="error" role="alert">{{error}}</p>
% end
<form method="post" action="/desk/patients/new" class="grid" autocomplete="off">
  <input type="hidden" name="csrf" value="{{desk['csrf']}}">
  {{!patient_inputs(typed)}}
  <button type="submit">{{t('register')}}</button>
</form>
