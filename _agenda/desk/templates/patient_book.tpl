<h1>{{t('book_for')}} · {{patient['name']}} {{patient['surname'] or ''}}</h1>
<form method="get" action="/desk/patients/{{patient['id']}}/book" class="inline">
  <label>{{t('doctor')}} <select name="doctorId">
    % for d in doctors:
    <option value="{{d['id']}}" {{'selected' if d['id'] == doctor_id else ''}}>{{d['name']}}</option>
    % end
  </select></label>
  <label>{{t('from_date')}} <input name="date" value="{{format_date(first)}}" size="10"></label>
  <button type="submit">{{t('look')}}</button>
</form>
% if not free:
<p class="warning">{{t('none')}}</p>
% end
<ul class="found">
% for slot in free:
  <li><a href="/desk/book?{{urlencode({'doctorId': slot.doctor_id, 'date': slot.date_text, 'time': slot.time, 'patientId': patient['id'], **({'centerId': slot.center_id} if slot.center_id else {})}, safe='/:')}}">{{t('weekdays')[slot.date.weekday()]}} {{slot.date_text}} {{slot.time}} · {{slot.doctor_name}} · {{slot.center_id or ''}}</a></li>
% end
</ul>
