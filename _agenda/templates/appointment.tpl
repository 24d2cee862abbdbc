<h1>{{t('appointment')}} · {{appointment['patientName']}}</h1>
% if error:
<p class="error" role="alert">{{error}}</p>
% end
<dl>
  <dt>{{t('date')}}</dt><dd>{{appointment['date']}} {{appointment['time']}}</dd>
  <dt>{{t('doctor')}}</dt><dd>{{appointment['doctorName']}}</dd>
  <dt>{{t('phone')}}</dt><dd>{{dialled(appointment['phone'])}}</dd>
  <dt>{{t('status')}}</dt><dd>{{t(appointment['extraData']['status'])}}</dd>
  <dt>{{t('reason')}}</dt><dd>{{appointment['reason'] or ''}}</dd>
</dl>
<p><a href="/desk/patients/{{appointment['patientId']}}">{{t('patient')}}</a></p>
<h2>{{t('move')}}</h2>
<form method="get" action="/desk/appointments/{{appointment['appointmentId']}}">
  <label>{{t('date')}} <input name="date" value="{{format_date(day)}}" size="10"></label>
  <button type="submit">{{t('show')}}</button>
</form>
<form method="post" action="/desk/appointments/{{appointment['appointmentId']}}/move">
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
% if appointment['extraData']['status'] != 'confirmed':
<form method="post" action="/desk/appointments/{{appointment['appointmentId']}}/confirm">
  <input type="hidden" name="csrf" value="{{desk['csrf']}}">
  <button type="submit">{{t('confirm')}}</button>
</form>
% end
<h2>{{t('cancel')}}</h2>
<form method="post" action="/desk/appointments/{{appointment['appointmentId']}}/cancel">
  <input type="hidden" name="csrf" value="{{desk['csrf']}}">
  <label>{{t('cancel_reason')}} <input name="reason" required></label>
  <button type="submit" class="danger">{{t('cancel')}}</button>
</form>
