<div class="toolbar">
  <form method="get" action="/desk/day">
    % if centers:
    <label>{{t('center')}}
      <select name="centerId">
        % for center in centers:
        <option value="{{center['id']}}" {{'selected' if center['id'] == center_id else ''}}>{{center['name']}}</option>
        % end
      </select>
    </label>
    % end
    <label>{{t('date')}} <input name="date" value="{{format_date(day)}}" size="10"></label>
    <button type="submit">{{t('show')}}</button>
  </form>
  <a href="{{previous}}" aria-label="{{t('previous')}}">&lt;</a>
  <strong>{{t('weekdays')[day.weekday()]}} {{format_date(day)}}</strong>
  <a href="{{following}}" aria-label="{{t('next')}}">&gt;</a>
  <a href="{{today}}">{{t('today')}}</a>
  <form method="post" action="/desk/patients" class="search" autocomplete="off">
    <input type="hidden" name="csrf" value="{{desk['csrf']}}">
    <input name="q" autocomplete="off" placeholder="{{t('search_hint')}}" aria-label="{{t('search')}}">
    <button type="submit">{{t('find')}}</button>
  </form>
</div>
% if not plans:
<p>{{t('no_doctors')}}</p>
% else:
<table class="day">
  <thead><tr><th></th>
  % for plan in plans:
    <th scope="col">{{plan['name']}} <small>({{plan['speciality_id']}})</small></th>
  % end
  </tr></thead>
  <tbody>
  % for time in times:
  <tr><th scope="row">{{time}}</th>
    % for plan in plans:
    % cell = cells.get((plan['id'], time))
    % if cell is None:
    <td class="none"></td>
    % elif cell['state'] == 'booked':
    % a = cell['appointment']
    <td class="booked {{a['status']}}">
      <a href="/desk/appointments/{{a['id']}}">{{a['patient_name']}}</a>
      <span class="phone">{{dialled(a['phone'])}}</span>
      <span class="status">{{t(a['status'])}}</span>
      % if a['reason']:
      <span class="reason">· {{a['reason']}}</span>
      % end
    </td>
    % elif cell['state'] == 'free':
    % slot = {'doctorId': plan['id'], 'date': format_date(day), 'time': time, **({'centerId': cell['center_id']} if cell.get('center_id') else {})}
    <td class="free"><a href="/desk/book?{{urlencode(slot, safe='/:')}}">+ {{t('free')}}</a></td>
    % elif cell['state'] == 'closed':
    <td class="closed">░ {{t('closed')}}{{': ' + cell['reason'] if cell['reason'] else ''}}</td>
    % elif cell['state'] in ('taken', 'beyond_horizon'):
    <td class="past">{{t(cell['state'])}}</td>
    % else:
    <td class="past">{{t('past')}}</td>
    % end
    % end
  </tr>
  % end
  </tbody>
</table>
% end
