<div class="toolbar">
  <form method="get" action="/desk/week" class="pick">
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
        <option value="{{d['id']}}" {{'selected' if doctor and d['id'] == doctor['id'] else ''}}>{{d['name']}}</option>
        % end
      </select>
    </label>
    <label>{{t('date')}} <input name="date" id="date" value="{{format_date(day)}}" size="10"></label>
    <button type="submit">{{t('show')}}</button>
  </form>
  <nav class="days">
    <a href="{{previous}}" id="previous" aria-label="{{t('previous')}}">&lt;</a>
    <strong>{{t('doctor_week', doctor=doctor['name']) if doctor else t('center_week')}} · {{format_date(day)}}</strong>
    <a href="{{following}}" id="following" aria-label="{{t('next')}}">&gt;</a>
  </nav>
</div>
% if doctor:
{{!drawn}}
% else:
<table class="week">
  <thead><tr>
  % for d in week:
    <th scope="col"><a href="/desk/day?{{urlencode({'date': d['date'], 'centerId': center_id or ''}, safe='/')}}">{{t('weekdays')[d['day'].weekday()]}} {{d['date']}}</a></th>
  % end
  </tr></thead>
  <tbody><tr>
  % for d in week:
    <td>
    % if not d['doctors']:
      <span class="muted">{{t('off')}}</span>
    % end
    % for counts in d['doctors']:
      <p><a href="/desk/week?{{urlencode({'date': d['date'], 'doctorId': counts['id']}, safe='/')}}"><strong>{{counts['name']}}</strong></a><br>{{counts['booked']}} {{t('booked_count')}} · {{counts['free']}} {{t('free_count')}}
      % if counts['to_call']:
      · <span class="call">{{t('to_call')}} {{counts['to_call']}}</span>
      % end
      </p>
    % end
    </td>
  % end
  </tr></tbody>
</table>
% end
