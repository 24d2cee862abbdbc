<h1>{{t('waitlist_title')}}</h1>
% if error:
<p class="error" role="alert">{{error}}</p>
% end
<h2>{{t('free_now')}}</h2>
% if not free:
<p>{{t('no_slots')}}</p>
% end
<ul class="free-now">
% for slot, fitting, more in free:
  <li><strong>{{t('weekdays')[slot.date.weekday()]}} {{slot.date_text}} {{slot.time}}</strong> · {{slot.doctor_name}}
    <ul>
    % for w in fitting:
      <li>{{w['patient_name']}} · {{dialled(w['phone'])}}{{' · ' + w['note'] if w['note'] else ''}}{{' · ' + t('brings_forward', date=format_date(w['forward_date']), time=w['forward_time']) if w['forward_date'] else ''}}
        <a href="{{booking_of(slot, w)}}">{{t('book')}}</a></li>
    % end
    % if more > 0:
      <li class="more"><a href="/desk/book?{{urlencode({'doctorId': slot.doctor_id, 'date': slot.date_text, 'time': slot.time, **({'centerId': slot.center_id} if slot.center_id else {})}, safe='/:')}}">{{t('more_waiting', count=more)}}</a></li>
    % end
    </ul>
  </li>
% end
</ul>
<h2>{{t('waiting_now')}} ({{waiting_count}})</h2>
% if pages > 1:
<p class="pages">{{t('page_of', page=page + 1, pages=pages)}}
  % if page > 0:
  <a href="/desk/waitlist?page={{page - 1}}" rel="prev">{{t('previous_page')}}</a>
  % end
  % if page + 1 < pages:
  <a href="/desk/waitlist?page={{page + 1}}" rel="next">{{t('next_page')}}</a>
  % end
</p>
% end
% if not entries:
<p>{{t('nobody_waiting')}}</p>
% else:
<table>
  <thead><tr><th>{{t('since')}}</th><th>{{t('patient')}}</th><th>{{t('phone')}}</th><th>{{t('doctor')}}</th><th>{{t('when')}}</th><th>{{t('note')}}</th><th></th></tr></thead>
  <tbody>
  % for w in entries:
  <tr><td>{{format_date(w['created_at'][:10])}}</td><td><a href="/desk/patients/{{w['patient_id']}}">{{w['patient_name']}}</a></td><td class="phone">{{dialled(w['phone'])}}</td>
    <td>{{w['doctor_name'] or specialities.get(w['speciality_id'], w['speciality_id'])}}{{' · ' + next((c['name'] for c in centers if c['id'] == w['center_id']), w['center_id']) if w['center_id'] else ''}}</td>
    <td>{{window_text(w)}}{{' · ' + t('brings_forward', date=format_date(w['forward_date']), time=w['forward_time']) if w['forward_date'] else ''}}</td><td>{{w['note'] or ''}}</td>
    <td><form method="post" action="/desk/waitlist/{{w['id']}}/remove"><input type="hidden" name="csrf" value="{{desk['csrf']}}"><button>{{t('remove')}}</button></form></td></tr>
  % end
  </tbody>
</table>
% end
<h2>{{t('waiting_add')}}</h2>
<form method="post" action="/desk/waitlist" class="grid waiting-add" autocomplete="off">
  <input type="hidden" name="csrf" value="{{desk['csrf']}}">
  % if chosen:
  <input type="hidden" name="patientId" value="{{chosen['id']}}">
  <p class="chosen">{{t('patient')}}: <strong>{{chosen['name']}} {{chosen['surname'] or ''}}</strong> · {{nif_of(chosen)}} · {{dialled(chosen['phone'])}} <a href="/desk/waitlist">{{t('other_patient')}}</a></p>
  % else:
  <label>{{t('search')}} <input name="q" value="{{q}}" autocomplete="off" placeholder="{{t('search_hint')}}">{{!wrong_note('q')}}{{!wrong_note('patientId')}}</label>
  <button type="submit" formaction="/desk/waitlist/search" formnovalidate>{{t('find')}}</button>
  % if found is not None:
  <ul class="found">
  % if not found:
    <li>{{t('no_patients')}}</li>
  % end
  % for patient in found:
    <li>{{patient['name']}} {{patient['surname'] or ''}} · {{nif_of(patient)}} · {{dialled(patient['phone'])}}
      <button type="submit" formaction="/desk/waitlist/search" formnovalidate name="patientId" value="{{patient['id']}}">{{t('choose')}}</button></li>
  % end
  </ul>
  % end
  % end
  <label>{{t('doctor')}} <select name="doctorId"><option value="">{{t('any_doctor')}}</option>
    % for d in doctors:
    <option value="{{d['id']}}" {{'selected' if typed['doctorId'] == d['id'] else ''}}>{{d['name']}}</option>
    % end
  </select></label>
  <label>{{t('speciality')}} <select name="specialityId"><option value=""></option>
    % for key, name in sorted(specialities.items(), key=lambda item: item[1]):
    <option value="{{key}}" {{'selected' if typed['specialityId'] == key else ''}}>{{name}}</option>
    % end
  </select></label>
  <label>{{t('center')}} <select name="centerId"><option value="">{{t('all_centers')}}</option>
    % for c in centers:
    <option value="{{c['id']}}" {{'selected' if typed['centerId'] == c['id'] else ''}}>{{c['name']}}</option>
    % end
  </select></label>
  <label>{{t('insurance')}} <select name="insuranceId"><option value=""></option>
    % for key, name in sorted(insurances.items(), key=lambda item: item[1]):
    <option value="{{key}}" {{'selected' if typed['insuranceId'] == key else ''}}>{{name}}</option>
    % end
  </select></label>
  % if later:
  <label>{{t('brings_forward_which')}} <select name="appointmentId"><option value="">{{t('brings_forward_none')}}</option>
    % for a in later:
    <option value="{{a['id']}}" {{'selected' if typed['appointmentId'] == str(a['id']) else ''}}>{{format_date(a['date'])}} {{a['time']}} · {{a['doctor_name']}}</option>
    % end
  </select>{{!wrong_note('appointmentId')}}</label>
  % end
  <label>{{t('from')}} <input name="dateFrom" value="{{typed['dateFrom']}}" placeholder="DD/MM/AAAA" required>{{!wrong_note('dateFrom')}}</label>
  <label>{{t('to')}} <input name="dateTo" value="{{typed['dateTo']}}" placeholder="DD/MM/AAAA" required>{{!wrong_note('dateTo')}}</label>
  <label>{{t('time_from')}} <input name="timeFrom" value="{{typed['timeFrom']}}" placeholder="HH:MM"></label>
  <label>{{t('time_to')}} <input name="timeTo" value="{{typed['timeTo']}}" placeholder="HH:MM"></label>
  <label>{{t('note')}} <input name="note" value="{{typed['note']}}" autocomplete="off"></label>
  % if chosen:
  <button type="submit">{{t('waiting_add')}}</button>
  % end
</form>
