<h1>{{t('search')}}</h1>
<p><a href="/desk/patients/new">{{t('new_patient')}}</a></p>
<form method="post" action="/desk/patients" class="search" autocomplete="off">
  <input type="hidden" name="csrf" value="{{desk['csrf']}}">
  <input name="q" id="q" value="{{q}}" autocomplete="off" placeholder="{{t('search_hint')}}" aria-label="{{t('search')}}" autofocus>
  <button type="submit">{{t('find')}}</button>{{!wrong_note('q')}}
</form>
% if found is not None:
% if not found:
<p>{{t('no_patients')}}</p>
% end
<ul class="found">
% for patient in found:
  <li><a href="/desk/patients/{{patient['id']}}">{{patient['name']}} {{patient['surname'] or ''}}</a> · {{nif_of(patient)}} · <span class="phone">{{dialled(patient['phone'])}}</span> · {{t('email_on_file' if patient['email'] and patient['messages'] == 1 else 'email_stopped' if patient['email'] else 'email_none')}}</li>
% end
</ul>
% end
