<h1>{{t('appointment')}} · {{appointment['patient_name']}}</h1>
% if error:
<p class="error" role="alert">{{error}}
% if elsewhere:
<a href="/desk/appointments/{{elsewhere['appointmentId']}}">{{t('see_other_visit', date=elsewhere['date'], time=elsewhere['time'], doctor=elsewhere['doctorName'])}}</a>
% end
</p>
% end
% cancelled = appointment['status'] == 'cancelled'
% if cancelled:
% gone = [e for e in appointment['history'] if e['action'] in ('appointment.cancelled', 'appointment.declined', 'appointment.released', 'patient.erasure_requested')]
% reason = appointment['cancel_reason'] or ''
% said = t('why_' + reason) if reason else ''
<p class="warning">{{t('cancelled_on', when=gone[-1]['when'] if gone else '', who=gone[-1]['who'] if gone else '', reason=reason if said == 'why_' + reason else said)}}</p>
% end
% if appointment['overlap_accepted'] and not cancelled:
<p class="warning overlap-note"><strong class="overlap-mark">{{t('overlap_mark')}}</strong>
% for other in overlapped:
<a href="/desk/appointments/{{other['id']}}">{{t('see_other_visit', date=format_date(other['date']), time=other['time'], doctor=other['doctor'])}}</a>
% end
% if not overlapped:
{{t('overlap_gone')}}
% end
</p>
% end
<dl>
  <dt>{{t('date')}}</dt><dd>{{t('weekdays')[appointment['weekday']]}} {{format_date(appointment['date'])}} {{appointment['start']}}–{{appointment['end']}}</dd>
  <dt>{{t('doctor')}}</dt><dd>{{appointment['doctor_name']}} ({{appointment['speciality_id'] or ''}})</dd>
  <dt>{{t('center')}}</dt><dd>{{center_names.get(appointment['center_id'], appointment['center_id'] or '')}}</dd>
  <dt>{{t('patient')}}</dt><dd><a href="/desk/patients/{{appointment['patient_id']}}">{{appointment['patient_name']}}</a> · {{appointment['nif']}}</dd>
  <dt>{{t('phone')}}</dt><dd><span class="phone">{{dialled(appointment['phone'])}}</span></dd>
  <dt>{{t('field_email')}}</dt><dd class="mail-to">{{mail_to}}</dd>
  <dt>{{t('insurance')}}</dt><dd>{{insurance_names.get(appointment['insurance_id'], appointment['insurance_id'] or '')}}</dd>
  <dt>{{t('status')}}</dt><dd>{{t(appointment['status'])}}
  % if appointment.get('pending') and not cancelled:
  · <strong class="pending-mark">{{pending(appointment)}}</strong>
  % if appointment['pending'] == 'reception':
  · <a href="/desk/verify">{{t('verify_title')}}</a>
  % end
  % end
  {{' · ' + t('to_call') if appointment['to_call'] and not cancelled else ''}}{{' · ' + t('squeezed') if appointment['squeezed'] else ''}}{{' · ' + t('series_place', place=appointment['series_place'], count=appointment['series_count']) if appointment['series_id'] else ''}}</dd>
  <dt>{{t('attendance')}}</dt><dd>{{t(appointment['attendance'], time=appointment['arrived_local']) if appointment['attendance'] else '—'}}</dd>
  <dt>{{t('reason')}}</dt><dd>{{appointment['reason'] or ''}}</dd>
  % if appointment['note']:
  <dt>{{t('visit_note')}}</dt><dd class="visit-note">{{appointment['note']}}</dd>
  % end
  % if appointment['patient_note']:
  <dt>{{t('patient_note')}}</dt><dd class="patient-note">{{appointment['patient_note']}}</dd>
  % end
  <dt>{{t('booked_by')}}</dt><dd>{{who_booked(t, appointment['booked_by'])}}</dd>
</dl>
% if not cancelled:
% if marks or appointment['attendance']:
<form method="post" action="/desk/appointments/{{appointment['id']}}/attendance" class="inline">
  <input type="hidden" name="csrf" value="{{desk['csrf']}}">
  % for mark in marks:
  <button name="mark" value="{{mark}}">{{t('mark_' + mark)}}</button>
  % end
  % if appointment['attendance']:
  <button name="mark" value="">{{t('undo')}}</button>
  % end
</form>
% end
% if appointment['status'] != 'confirmed' and not appointment.get('pending'):
<form method="post" action="/desk/appointments/{{appointment['id']}}/confirm" class="inline">
  <input type="hidden" name="csrf" value="{{desk['csrf']}}">
  <button type="submit">{{t('confirm')}}</button>
</form>
% end
<details class="visit-details" {{'open' if wrong else ''}}>
<summary>{{t('details')}}</summary>
<form method="post" action="/desk/appointments/{{appointment['id']}}/details" class="grid" autocomplete="off">
  <input type="hidden" name="csrf" value="{{desk['csrf']}}">
  <label>{{t('reason')}} <input name="reason" value="{{typed['reason']}}" autocomplete="off">{{!wrong_note('reason')}}</label>
  <label>{{t('insurance')}} <select name="insuranceId">
    <option value="">{{t('no_insurance')}}</option>
    % offered = set(accepted or insurance_names) | ({appointment['insurance_id']} if appointment['insurance_id'] else set())
    % for key in sorted(offered, key=lambda key: insurance_names.get(key, key)):
    <option value="{{key}}"{{!' selected' if typed['insuranceId'] == key else ''}}>{{insurance_names.get(key, key)}}</option>
    % end
  </select>{{!wrong_note('insuranceId')}}</label>
  % if appointment['type_id']:
  <label>{{t('visit_type')}} <select name="typeId">
    <option value="{{appointment['type_id']}}">{{t('type_kept', type=appointment['type_name'] or appointment['type_id'])}}</option>
    % for kind, why in kinds:
    % if why is None or typed['typeId'] == kind.id:  # only what fits, and what was typed, refused
    <option value="{{kind.id}}"{{!' selected' if typed['typeId'] == kind.id else ''}}>{{kind.name}} ({{kind.minutes}} min)</option>
    % end
    % end
  </select>{{!wrong_note('typeId')}}</label>
  <p class="help">{{t('retype_help')}}</p>
  % end
  <label>{{t('visit_note')}} <input name="note" value="{{typed['note']}}" autocomplete="off">{{!wrong_note('note')}}</label>
  <p class="help">{{t('note_help')}}</p>
  <button type="submit">{{t('save')}}</button>
</form>
</details>
% minutes_offered, length_now = lengths
% if len(minutes_offered) > 1 and not appointment['squeezed']:
<form method="post" action="/desk/appointments/{{appointment['id']}}/length" class="inline length" autocomplete="off">
  <input type="hidden" name="csrf" value="{{desk['csrf']}}">
  <label>{{t('length')}} <select name="minutes">
    % for m in minutes_offered:
    <option value="{{m}}"{{!' selected' if str(m) == length_now else ''}}>{{t('minutes', minutes=m)}}</option>
    % end
  </select></label>
  <button type="submit">{{t('length_change')}}</button>
  <span class="help">{{t('length_help')}}</span>
</form>
% end
<h2>{{t('move')}}</h2>
<form method="get" action="/desk/appointments/{{appointment['id']}}" class="inline">
  <label>{{t('doctor')}} <select name="doctorId">
    % for d in doctors:
    <option value="{{d['id']}}" {{'selected' if d['id'] == to_doctor else ''}}>{{d['name']}}</option>
    % end
  </select></label>
  <label>{{t('from_date')}} <input name="date" value="{{format_date(first)}}" size="10"></label>
  <button type="submit">{{t('look')}}</button>
</form>
% if free:
<form method="post" action="/desk/appointments/{{appointment['id']}}/move" class="inline">
  <input type="hidden" name="csrf" value="{{desk['csrf']}}">
  <label>{{t('next_free')}}
    <select name="slot">
    % for slot in free:
      % value = f"{slot.date_text}|{slot.time}|{slot.doctor_id}|{slot.center_id or ''}"
      <option value="{{value}}" {{'selected' if value == chosen else ''}}>{{t('weekdays')[slot.date.weekday()]}} {{slot.date_text}} {{slot.time}} · {{center_names.get(slot.center_id, slot.center_id or '')}}{{'' if slot.doctor_id == appointment['doctor_id'] else ' · ' + doctor_names.get(slot.doctor_id, '')}}</option>
    % end
    </select>
  </label>
  % if elsewhere:
  <label><input type="checkbox" name="acceptOverlap" value="1"> {{t('accept_overlap')}}</label>
  % end
  <button type="submit">{{t('move')}}</button>
</form>
% else:
<p class="warning">{{empty}}</p>
% end
<h2>{{t('cancel')}}</h2>
<form method="post" action="/desk/appointments/{{appointment['id']}}/cancel" autocomplete="off">
  <input type="hidden" name="csrf" value="{{desk['csrf']}}">
  <label>{{t('cancel_reason')}} <input name="reason" autocomplete="off" required></label>
  <button type="submit" class="danger">{{t('cancel')}}</button>
  % if appointment['series_id']:
  <button type="submit" class="danger" formaction="/desk/appointments/{{appointment['id']}}/cancel-rest">{{t('series_rest')}}</button>
  % end
</form>
% end
<h2>{{t('history')}}</h2>
<table>
  <thead><tr><th>{{t('when')}}</th><th>{{t('reader')}}</th><th>{{t('what')}}</th></tr></thead>
  <tbody>
  % for e in appointment['history']:
  <tr><td>{{e['when']}}</td><td>{{e['who']}}</td><td>{{t('event_' + e['action'])}}</td></tr>
  % end
  </tbody>
</table>
<h2>{{t('patient_messages')}}</h2>
% if messages:
<table class="messages">
  <thead><tr><th>{{t('message_when')}}</th><th>{{t('message_kind')}}</th><th>{{t('status')}}</th></tr></thead>
  <tbody>
  % for m in messages:
  % why = m['why'] if m['state'] in ('skipped', 'stale', 'failed', 'waiting') and m['error'] else ''
  <tr><td>{{m['when']}}</td><td>{{t('mailkind_' + m['kind'])}}</td><td>{{t('mailstate_held_tried' if m['tried'] else 'mailstate_retrying' if m['retrying'] else 'mailstate_' + m['state'], since=m['since'])}}{{' — ' + why if why else ''}}</td></tr>
  % end
  </tbody>
</table>
% else:
<p>{{t('no_messages')}}</p>
% end
% if not cancelled:
<form method="post" action="/desk/appointments/{{appointment['id']}}/mail" class="inline">
  <input type="hidden" name="csrf" value="{{desk['csrf']}}">
  <button type="submit">{{t('mail_send')}}</button>
</form>
% end
% if appointment['status'] != 'cancelled':
<form method="post" action="/desk/appointments/{{appointment['id']}}/card" target="_blank">
  <input type="hidden" name="csrf" value="{{desk['csrf']}}">
  <button type="submit">{{t('print_card')}}</button>
</form>
% end
