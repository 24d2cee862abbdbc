<h1>{{t('squeeze_title') if slot['squeeze'] else t('book_title_at', center=center_name) if center_name else t('book_title')}}</h1>
<p>{{doctor['name']}} · {{slot['date']}}{{' · ' + center_name if slot['squeeze'] and center_name else '' if slot['squeeze'] else ' · ' + (slot['time'] or '')}}</p>
% if slot['squeeze']:
<p class="warning">{{t('squeeze_hint')}}</p>
% end
% if kinds:
<form method="get" action="/desk/book" class="inline">
  % for key in ('doctorId', 'date', 'time', 'centerId', 'squeeze'):
  % if slot[key]:
  <input type="hidden" name="{{key}}" value="{{slot[key]}}">
  % end
  % end
  <label>{{t('visit_type')}} <select name="typeId">
    % for key, kind in kinds:
    <option value="{{key}}" {{'selected' if slot['typeId'] == key else ''}}>{{kind.name}} · {{t('minutes', minutes=kind.minutes)}}{{' + ' + t('minutes', minutes=kind.pause) if kind.pause else ''}}</option>
    % end
  </select></label>
  <button type="submit">{{t('change_type')}}</button>
</form>
% end
% if not slot['squeeze']:
<p class="next-free">{{t('next_free_type')}}
  % for scope in ('doctor', 'area'):
  <a href="/desk/book?{{urlencode({**{k: v for k, v in slot.items() if v}, 'ahead': scope}, safe='/:')}}" id="ahead-{{scope}}">{{t('next_free_' + scope)}}</a>
  % end
</p>
% end
% if ahead:
<p class="next-free-found" role="status">{{t('next_free_none', date=ahead['until']) if 'until' in ahead else t('next_free_found', when=t('weekdays')[ahead['slot'].date.weekday()] + ' ' + ahead['slot'].date_text + ' ' + ahead['slot'].time, doctor=ahead['slot'].doctor_name, center=ahead['center'])}}
  % if 'address' in ahead:
  <a href="{{ahead['address']}}" id="ahead-open">{{t('next_free_open')}}</a>
  % end
</p>
% end
% if unfit is not None:
<p class="warning why">{{t('type_does_not_fit')}} {{unfit}} {{t('type_fits_at') if starts else t('type_fits_nowhere')}}
  % for start in starts:
  <a href="/desk/book?{{urlencode({**{k: v for k, v in slot.items() if v}, 'time': start}, safe='/:')}}">{{start}}</a>
  % end
</p>
% end
% if error:
<p class="error" role="alert">{{error}}
% if booked:
<a href="/desk/appointments/{{booked}}">{{t('see_booked')}}</a>
% end
% if elsewhere:
<a href="/desk/appointments/{{elsewhere['appointmentId']}}">{{t('see_other_visit', date=elsewhere['date'], time=elsewhere['time'], doctor=elsewhere['doctorName'])}}</a>
% end
% if existing:
<a href="/desk/patients/{{existing['id']}}">{{t('existing_patient', name=existing['full_name'])}}</a>
% end
</p>
% end
% if offers:
% first = True
% for key, heading in (('mine', t('way_on_mine', doctor=doctor['name'])), ('others', t('way_on_others'))):
% if offers[key] or key == 'mine':
<h2>{{heading}}</h2>
% end
% if key == 'mine' and not offers[key]:
<p>{{t('way_on_none')}}</p>
% end
<ul class="found way-on">
% for s in offers[key]:
  <li>
    <form method="post" action="/desk/book" autocomplete="off">
      <input type="hidden" name="csrf" value="{{desk['csrf']}}">
      % for name, value in (('doctorId', s.doctor_id), ('date', s.date_text), ('time', s.time), ('centerId', s.center_id), ('typeId', slot['typeId']), ('patientId', found[0]['id']), ('insuranceId', typed['insuranceId']), ('reason', typed['reason']), ('waitlistId', waitlist_id)):
      % if value:
      <input type="hidden" name="{{name}}" value="{{value}}">
      % end
      % end
      {{t('weekdays')[s.date.weekday()]}} {{s.date_text}} {{s.time}} · {{s.doctor_name}} · {{offers['centers'].get(s.center_id, s.center_id or '')}}
      <button type="submit"{{' autofocus' if first and focus == 'offer' else ''}}>{{t('book')}}</button>
    </form>
  </li>
% first = False
% end
</ul>
% end
% end
<form method="post" action="/desk/book/search" class="search" autocomplete="off">
  <input type="hidden" name="csrf" value="{{desk['csrf']}}">
  % for key in ('doctorId', 'date', 'time', 'centerId', 'squeeze', 'typeId'):
  % if slot[key]:
  <input type="hidden" name="{{key}}" value="{{slot[key]}}">
  % end
  % end
  <label>{{t('search')}} <input name="q" id="q" autocomplete="off" value="{{q}}" placeholder="{{t('search_hint')}}"{{' autofocus' if focus == 'search' else ''}}>{{!wrong_note('q')}}</label>
  <button type="submit">{{t('find')}}</button>
</form>
% if waiting_here:
<h2>{{t('waiting_for_slot')}}</h2>
<ul class="found">
% for w in waiting_here:
  <li>
    <form method="post" action="/desk/book" autocomplete="off">
      <input type="hidden" name="csrf" value="{{desk['csrf']}}">
      % for key in ('doctorId', 'date', 'time', 'centerId', 'typeId'):
      % if slot[key]:
      <input type="hidden" name="{{key}}" value="{{slot[key]}}">
      % end
      % end
      <input type="hidden" name="patientId" value="{{w['patient_id']}}"><input type="hidden" name="waitlistId" value="{{w['id']}}">
      {{w['patient_name']}} · {{dialled(w['phone'])}}{{' · ' + w['note'] if w['note'] else ''}}{{' · ' + t('brings_forward', date=format_date(w['forward_date']), time=w['forward_time']) if w['forward_date'] else ''}}
      % if insurances:
      <label>{{t('insurance')}} <select name="insuranceId" required>
        <option value="">{{t('choose_insurance')}}</option>
        % for key, name in insurances:
        <option value="{{key}}" {{'selected' if w['insurance_id'] == key else ''}}>{{name}}</option>
        % end
      </select></label>
      % end
      <button type="submit">{{t('brings_forward_book') if w['forward_date'] else t('book')}}</button>
    </form>
  </li>
% end
</ul>
% end
% if found is not None:
% if not found:
<p>{{t('no_patients')}}</p>
% end
<ul class="found">
% for n, patient in enumerate(found):
  <li>
    <form method="post" action="/desk/book" autocomplete="off">
      <input type="hidden" name="csrf" value="{{desk['csrf']}}">
      % for key in ('doctorId', 'date', 'time', 'centerId', 'squeeze', 'typeId'):
      % if key == 'time' and slot['squeeze']:
      <label>{{t('time')}} <input name="time" value="{{slot['time'] or ''}}" placeholder="HH:MM" size="5" required></label>
      % elif slot[key]:
      <input type="hidden" name="{{key}}" value="{{slot[key]}}">
      % end
      % end
      <input type="hidden" name="patientId" value="{{patient['id']}}">
      % if waitlist_id and not q:
      <input type="hidden" name="waitlistId" value="{{waitlist_id}}">
      % end
      {{patient['name']}} {{patient['surname'] or ''}} · {{nif_of(patient)}} · {{dialled(patient['phone'])}} · {{t('email_on_file' if patient['email'] and patient['messages'] == 1 else 'email_stopped' if patient['email'] else 'email_none')}}
      % if entry and entry['forward_date'] and not q:
      <strong class="warning">{{t('brings_forward_note', date=format_date(entry['forward_date']), time=entry['forward_time'])}}</strong>
      % end
      % if insurances:
      <label>{{t('insurance')}} <select name="insuranceId" required>
        <option value="">{{t('choose_insurance')}}</option>
        % for key, name in insurances:
        <option value="{{key}}" {{'selected' if usual.get(patient['id']) == key else ''}}>{{name}}</option>
        % end
      </select>{{!wrong_note('insuranceId')}}</label>
      % end
      <label>{{t('reason')}} <input name="reason" autocomplete="off" value="{{typed['reason']}}">{{!wrong_note('reason')}}</label>
      % if elsewhere and not slot['squeeze']:
      <label><input type="checkbox" name="acceptOverlap" value="1"> {{t('accept_overlap')}}</label>
      % end
      <button type="submit"{{' autofocus' if n == 0 and focus == 'found' else ''}}>{{t('brings_forward_book') if entry and entry['forward_date'] and not q else t('book')}}</button>
      % if not slot['squeeze']:
      <button type="submit" formaction="/desk/series" name="step" value="preview">{{t('series')}}</button>
      % end
    </form>
  </li>
% end
</ul>
% end
<h2>{{t('new_patient')}}</h2>
<form method="post" action="/desk/book" class="grid" autocomplete="off">
  <input type="hidden" name="csrf" value="{{desk['csrf']}}">
  % for key in ('doctorId', 'date', 'time', 'centerId', 'squeeze', 'typeId'):
  % if key == 'time' and slot['squeeze']:
  <label>{{t('time')}} <input name="time" autocomplete="off" value="{{slot['time'] or ''}}" placeholder="HH:MM" required>{{!wrong_note('time')}}</label>
  % elif slot[key]:
  <input type="hidden" name="{{key}}" value="{{slot[key]}}">
  % end
  % end
  {{!patient_inputs(typed)}}
  % if insurances:
  <label>{{t('insurance')}} <select name="insuranceId" required>
    <option value="">{{t('choose_insurance')}}</option>
    % for key, name in insurances:
    <option value="{{key}}" {{'selected' if typed['insuranceId'] == key else ''}}>{{name}}</option>
    % end
  </select>{{!wrong_note('insuranceId')}}</label>
  % end
  <label>{{t('reason')}} <input name="reason" autocomplete="off" value="{{typed['reason']}}">{{!wrong_note('reason')}}</label>
  <button type="submit">{{t('register_and_book')}}</button>
</form>
