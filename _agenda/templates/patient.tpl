<h1>{{patient['name']}} {{patient['surname'] or ''}}</h1>
% if error:
<p class="error" role="alert">{{error}}</p>
% end
<p><a href="/desk/patients/{{patient['id']}}/book">{{t('book_for')}}</a></p>
<details {{'open' if error else ''}}>
  <summary>{{t('edit')}}</summary>
  <form method="post" action="/desk/patients/{{patient['id']}}" class="grid" autocomplete="off">
    <input type="hidden" name="csrf" value="{{desk['csrf']}}">
    <label>{{t('name')}} <input name="name" autocomplete="off" value="{{typed['name']}}" required>{{!wrong_note('name')}}</label>
    <label>{{t('surname')}} <input name="surname" autocomplete="off" value="{{typed['surname']}}">{{!wrong_note('surname')}}</label>
    <label>{{t('nif_any')}} <input name="nif" autocomplete="off" value="{{typed['nif'] or ''}}" {{'' if patient['guardian_id'] else 'required'}}>{{!wrong_note('nif')}}</label>
    <label>{{t('phone')}} <input name="phone" autocomplete="off" value="{{typed['phone']}}">{{!wrong_note('phone')}}</label>
    <label>{{t('birth')}} <input name="birthDate" autocomplete="off" value="{{typed['birthDate']}}" placeholder="DD/MM/AAAA">{{!wrong_note('birthDate')}}</label>
    <button type="submit">{{t('save')}}</button>
  </form>
</details>
<dl>
  <dt>{{t('nif')}}</dt><dd>{{nif_of(patient)}}</dd>
  <dt>{{t('phone')}}</dt><dd><span class="phone">{{dialled(patient['phone'])}}</span></dd>
  <dt>{{t('birth')}}</dt><dd>{{format_date(patient['birth_date']) if patient['birth_date'] else ''}}</dd>
</dl>
% coming = [a for a in patient['appointments'] if a['date'] >= today]
% past = [a for a in patient['appointments'] if a['date'] < today]
% for title, listed in ((t('coming'), coming), (t('past_appointments'), past), (t('cancelled_appointments'), cancelled)):
<h2>{{title}}</h2>
% if not listed:
<p>{{t('none')}}</p>
% end
<ul>
% for a in listed:
  <li><a href="/desk/appointments/{{a['id']}}">{{format_date(a['date'])}} {{a['start']}}</a> · {{a['doctor_name']}} · {{t(a['status'])}}{{' · ' + t(a['attendance'], time='') if a['attendance'] else ''}}{{' · ' + t('to_call') if a['to_call'] and a['status'] != 'cancelled' else ''}}{{' · ' + t('squeezed') if a['squeezed'] else ''}}{{' · ' + t('series_place', place=a['series_place'], count=a['series_count']) if a['series_id'] else ''}} · {{a['reason'] or ''}}</li>
% end
</ul>
% end
% if desk['role'] == 'admin':
<p class="admin">
  <a href="/desk/patients/{{patient['id']}}/access">{{t('access_link')}}</a> ·
  <a href="/desk/patients/{{patient['id']}}/copy">{{t('copy_html')}}</a> ·
  <a href="/desk/patients/{{patient['id']}}/copy?format=json">{{t('copy_json')}}</a> ·
  <a href="/desk/patients/{{patient['id']}}/erase">{{t('erase')}}</a>
</p>
% end
