<h1>{{patient['name']}} {{patient['surname'] or ''}}</h1>
% if error:
<p class="error" role="alert">{{error}}</p>
% end
<p><a href="/desk/patients/{{patient['id']}}/book">{{t('book_for')}}</a></p>
<details {{'open' if error else ''}}>
  <summary>{{t('edit')}}</summary>
  <form method="post" action="/desk/patients/{{patient['id']}}" class="grid" autocomplete="off">
    <input type="hidden" name="csrf" value="{{desk['csrf']}}">
    % for column in patient_form:
    % if choices(column):
    <label>{{t('field_' + column.field)}} <select name="{{column.field}}">
      % for value, words in choices(column):
      <option value="{{value}}"{{!' selected' if typed[column.field] == value else ''}}>{{words}}</option>
      % end
    </select>{{!wrong_note(column.field)}}</label>
    % elif column.shape == 'nif':
    <label>{{t('nif_any')}} <input name="nif" autocomplete="off" value="{{typed['nif'] or ''}}" {{'' if patient['guardian_id'] else 'required'}}>{{!wrong_note('nif')}}</label>
    % else:
    <label>{{t('field_' + column.field)}} <input name="{{column.field}}" autocomplete="off" value="{{typed[column.field]}}"{{!' required' if column.required else ''}}{{!' placeholder="DD/MM/AAAA"' if column.shape == 'date' else ''}}>{{!wrong_note(column.field)}}</label>
    % end
    % end
    <button type="submit">{{t('save')}}</button>
  </form>
</details>
<dl>
  % for column in patient_form:
  % value = patient[column.key]
  % if column.shape == 'nif':
  <dt>{{t('field_nif')}}</dt><dd>{{nif_of(patient)}}</dd>
  % elif column.shape == 'phone':
  <dt>{{t('field_' + column.field)}}</dt><dd><span class="phone">{{dialled(value)}}</span></dd>
  % elif choices(column):
  <dt>{{t('field_' + column.field)}}</dt><dd>{{dict(choices(column)).get(shown[column.field], '')}}</dd>
  % elif column.name not in ('name', 'surname'):  # the heading's
  <dt>{{t('field_' + column.field)}}</dt><dd>{{format_date(value) if column.shape == 'date' and value else value or ''}}</dd>
  % end
  % end
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
  <li><a href="/desk/appointments/{{a['id']}}">{{format_date(a['date'])}} {{a['start']}}</a> · {{a['doctor_name']}} · {{t(a['status'])}}{{' · ' + pending(a) if a.get('pending') and a['status'] != 'cancelled' else ''}}{{' · ' + t(a['attendance'], time='') if a['attendance'] else ''}}{{' · ' + t('to_call') if a['to_call'] and a['status'] != 'cancelled' else ''}}{{' · ' + t('squeezed') if a['squeezed'] else ''}}{{' · ' + t('series_place', place=a['series_place'], count=a['series_count']) if a['series_id'] else ''}} · {{a['reason'] or ''}}</li>
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
