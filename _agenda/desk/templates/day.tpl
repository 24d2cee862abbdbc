<div class="toolbar">
  <form method="get" action="/desk/day" class="pick">
    % if centers:
    <label>{{t('center')}}
      <select name="centerId">
        % for center in centers:
        <option value="{{center['id']}}" {{'selected' if center['id'] == center_id else ''}}>{{center['name']}}</option>
        % end
      </select>
    </label>
    % end
    <label>{{t('doctor')}}
      <select name="doctorId">
        <option value="">{{t('all_doctors')}}</option>
        % for d in doctors:
        <option value="{{d['id']}}" {{'selected' if d['id'] == doctor_id else ''}}>{{d['name']}}</option>
        % end
      </select>
    </label>
    <label>{{t('date')}} <input name="date" id="date" value="{{format_date(day)}}" size="10"></label>
    <button type="submit">{{t('show')}}</button>
  </form>
  <nav class="days">
    <a href="{{previous}}" id="previous" aria-label="{{t('previous')}}">&lt;</a>
    <strong>{{t('weekdays')[day.weekday()]}} {{format_date(day)}}</strong>
    <a href="{{following}}" id="following" aria-label="{{t('next')}}">&gt;</a>
    <a href="{{today}}">{{t('today')}}</a>
    <a href="/desk/week?{{urlencode({'date': format_date(day), **({'doctorId': doctor_id} if doctor_id else {'centerId': center_id or ''})}, safe='/')}}">{{t('week')}}</a>
    % if printing:
    <a href="{{here}}" id="print-back">{{t('back')}}</a>
    % else:
    <a href="{{print_address}}" id="print">{{t('print')}}</a>
    % end
  </nav>
</div>
% if legend and not printing:
<ul class="legend" aria-label="{{t('legend')}}">
  % for colour, name in legend:
  <li><span class="swatch {{colour}}"></span>{{name or t('no_type')}}</li>
  % end
</ul>
% end
% if not timeline.columns:
<p>{{t('no_doctors')}}</p>
% else:
{{!drawn or ''}}
<section class="printed{{' on-screen' if printing else ''}}">
% for column in timeline.columns:
<table class="print-day">
  <thead><tr><th colspan="{{7 if legend else 6}}">{{printed_heading}} · {{t('weekdays')[day.weekday()]}} {{format_date(day)}} · {{column['name']}} ({{column['speciality_id']}})</th></tr>
  <tr><th>{{t('time')}}</th><th>{{t('patient')}}</th><th>{{t('phone')}}</th><th>{{t('insurance')}}</th><th>{{t('reason')}}</th>
  % if legend:
  <th>{{t('visit_type')}}</th>
  % end
  <th>{{t('status')}}</th></tr></thead>
  <tbody>
  % for a in column['cards']:
<tr><td>{{a['start']}}–{{a['end']}}</td><td>{{a['patient_name']}}</td><td>{{dialled(a['phone'])}}</td><td>{{a['insurance_id'] or ''}}</td><td>{{a['reason'] or ''}}</td>
  % if legend:
<td>{{!'<span class="swatch %s"></span>' % a['colour'] if a['colour'] else ''}}{{a['type_name'] or ''}}</td>
  % end
<td>{{pending(a) + ' · ' if a.get('pending') else ''}}{{t('overlap_mark') + ' ' if a['overlap_accepted'] else ''}}{{t('to_call') + ' ' if a['to_call'] else ''}}{{t('squeezed') + ' ' if a['squeezed'] else ''}}{{t(a['attendance'], time=a['arrived_local']) if a['attendance'] else t(a['status'])}}</td></tr>
  % end
  % if not column['cards']:
  <tr><td colspan="{{7 if legend else 6}}">{{t('none')}}</td></tr>
  % end
  </tbody>
</table>
% end
</section>
% end
<p class="keys-hint">{{t('keys_hint')}}</p>
