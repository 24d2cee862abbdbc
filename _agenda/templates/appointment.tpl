<h1>{{t('appointment')}} · {{appointment['patient_name']}}</h1>
% if error:
<p class="error" role="alert">{{error}}</p>
% end
<dl>
  <dt>{{t('date')}}</dt><dd>{{format_date(appointment['date'])}} {{appointment['start']}}–{{appointment['end']}}</dd>
  <dt>{{t('doctor')}}</dt><dd>{{appointment['doctor_name']}}</dd>
  <dt>{{t('phone')}}</dt><dd>{{dialled(appointment['phone'])}}</dd>
  <dt>{{t('status')}}</dt><dd>{{t(appointment['status'])}}</dd>
  <dt>{{t('reason')}}</dt><dd>{{appointment['reason'] or ''}}</dd>
</dl>
<p><a href="/desk/patients/{{appointment['patient_id']}}">{{t('patient')}}</a></p>
<h2>{{t('move')}}</h2>
<form method="get" action="/desk/appointments/{{appointment['id']}}">
  <label>{{t('date')}} <input name="date" value="{{format_date(day)}}" size="10"></label>
  <button type="submit">{{t('show')}}</button>
</form>
<form method="post" action="/desk/appointments/{{appointment['id']}}/move">
  <input type="hidden" name="csrf" value="{{desk['csrf']}}">
  <input type="hidden" name="date" value="{{format_date(day)}}">
  <label>{{t('move_to')}}
    <select name="time">
    % for slot in free:
      <option value="{{slot.time}}">{{slot.time}}</option>
    % end
    </select>
  </label>
  <button type="submit">{{t('move')}}</button>
</form>
% if appointment['status'] != 'confirmed':
<form method="post" action="/desk/appointments/{{appointment['id']}}/confirm">
  <input type="hidden" name="csrf" value="{{desk['csrf']}}">
  <button type="submit">{{t('confirm')}}</button>
</form>
% end
<h2>{{t('cancel')}}</h2>
<form method="post" action="/desk/appointments/{{appointment['id']}}/cancel" autocomplete="off">
  <input type="hidden" name="csrf" value="{{desk['csrf']}}">
  <label>{{t('cancel_reason')}} <input name="reason" autocomplete="off" required></label>
  <button type="submit" class="danger">{{t('cancel')}}</button>
</form>
