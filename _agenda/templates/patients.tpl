<h1>{{t('search')}}</h1>
<form method="get" action="/desk/patients" class="search">
  <input name="q" value="{{q}}" placeholder="{{t('search_hint')}}" aria-label="{{t('search')}}" autofocus>
  <button type="submit">{{t('find')}}</button>
</form>
% if found is not None:
% if not found:
<p>{{t('no_patients')}}</p>
% end
<ul class="found">
% for patient in found:
  <li><a href="/desk/patients/{{patient['id']}}">{{patient['name']}} {{patient['surname'] or ''}}</a> · {{patient['nif']}} · {{dialled(patient['phone'])}}</li>
% end
</ul>
% end
