<h1>{{t('verify_title')}}</h1>
<p>{{t('verify_hint')}}</p>
% if error:
<p class="error" role="alert">{{error}}
% if elsewhere:
<a href="/desk/appointments/{{elsewhere['appointmentId']}}">{{t('see_other_visit', date=elsewhere['date'], time=elsewhere['time'], doctor=elsewhere['doctorName'])}}</a>
% end
</p>
% end
% if not requests:
<p>{{t('verify_none')}}</p>
% else:
<table class="verify">
  <thead><tr><th>{{t('appointment')}}</th><th>{{t('verify_typed')}}</th><th>{{t('verify_on_file')}}</th><th>{{t('choose')}}</th></tr></thead>
  <tbody>
  % for r in requests:
  % v, typed = r['visit'], r['typed'] or {}
  <tr id="verify-{{r['appointment_id']}}">
    <td><a href="/desk/appointments/{{r['appointment_id']}}">{{t('weekdays')[v['weekday']]}} {{format_date(v['date'])}} {{v['start']}}</a><br>
      {{v['doctor_name']}} · {{center_names.get(v['center_id'], v['center_id'] or '')}}{{' · ' + v['type_name'] if v['type_name'] else ''}}</td>
    <td class="typed">{{typed.get('full_name') or ''}}<br>
      {{t('nif')}}: {{r['typed_nif'] or ''}} · {{t('birth')}}: {{format_date(typed['birth_date']) if typed.get('birth_date') else ''}}<br>
      <span class="phone">{{dialled(typed.get('phone'))}}</span>{{' · ' + typed['email'] if typed.get('email') else ''}}</td>
    <td class="on-file">
    % if v['status'] == 'cancelled':
      {{t('cancelled')}}
    % elif not r['on_file']:
      {{t('verify_no_record')}} <a href="/desk/patients/new">{{t('new_patient')}}</a>
    % end
    % for person in ([] if v['status'] == 'cancelled' else r['on_file']):
      <form method="post" action="/desk/verify/{{r['appointment_id']}}/match">
        <input type="hidden" name="csrf" value="{{desk['csrf']}}">
        <input type="hidden" name="patientId" value="{{person['id']}}">
        <a href="/desk/patients/{{person['id']}}">{{person['full_name']}}</a> · {{nif_of(person)}}{{' · ' + format_date(person['birth_date']) if person.get('birth_date') else ''}}<br>
        % if person['phone']:
        ☎ <a class="phone" href="tel:{{person['phone']}}">{{dialled(person['phone'])}}</a>
        % end
        <button type="submit">{{t('verify_match')}}</button>
      </form>
    % end
    </td>
    <td><form method="post" action="/desk/verify/{{r['appointment_id']}}/refuse">
      <input type="hidden" name="csrf" value="{{desk['csrf']}}">
      <button type="submit" class="danger">{{t('verify_close' if v['status'] == 'cancelled' else 'verify_refuse')}}</button>
    </form></td>
  </tr>
  % end
  </tbody>
</table>
% end
