  % for column in patient_form:
  % if choices(column):
  <label>{{t('field_' + column.field)}} <select name="{{column.field}}">
    % for value, words in choices(column):
    <option value="{{value}}"{{!' selected' if typed[column.field] == value else ''}}>{{words}}</option>
    % end
  </select>{{!wrong_note(column.field)}}</label>
  % elif column.shape == 'nif':
  <label>{{t('nif_or_guardian')}} <abbr class="required" title="{{t('required_mark')}}">*</abbr> <input name="nif" autocomplete="off" value="{{typed['nif'] or typed['guardianNif']}}" required>{{!wrong_note('nif')}}{{!wrong_note('guardianNif')}}</label>
  <label class="check"><input type="checkbox" name="underGuardian" value="1" {{'checked' if typed['underGuardian'] or (typed['guardianNif'] and not typed['nif']) else ''}}> {{t('under_guardian_box')}}</label>
  % elif column.required:
  <label>{{t('field_' + column.field)}} <abbr class="required" title="{{t('required_mark')}}">*</abbr> <input name="{{column.field}}" autocomplete="off" value="{{typed[column.field]}}" required>{{!wrong_note(column.field)}}</label>
  % else:
  <label>{{t('field_' + column.field)}} <input name="{{column.field}}" autocomplete="off" value="{{typed[column.field]}}"{{!' placeholder="DD/MM/AAAA"' if column.shape == 'date' else ''}}>{{!wrong_note(column.field)}}</label>
  % end
  % end
