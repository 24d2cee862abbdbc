<div class="toolbar">
  <form method="get" action="/desk/waiting" class="pick">
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
  </nav>
</div>
<h1>{{t('waiting_title')}}</h1>
<p>{{t('waiting_hint')}}</p>
% for state in states:
<section class="room {{state}}" id="{{state}}">
<h2>{{t('room_' + state, count=len(room[state]))}}</h2>
% if not room[state]:
<p>{{t('room_empty')}}</p>
% else:
<table class="room">
  <thead><tr><th>{{t('time')}}</th><th>{{t('patient')}}</th><th>{{t('doctor')}}</th><th>{{t('attendance')}}</th><th></th></tr></thead>
  <tbody>
  % for v in room[state]:
  <tr id="visit-{{v['id']}}">
    <td>{{v['start']}}</td>
    <td><a href="/desk/appointments/{{v['id']}}">{{v['patient_name']}}</a></td>
    <td>{{v['doctor_name']}}</td>
    <td>
    % if v['arrived_local']:
      {{t('arrived_at_time', time=v['arrived_local'])}} · {{t('punctuality_' + v['punctuality'], minutes=v['lateness'])}}
    % end
    % if state == 'waiting' and v['waited'] is not None:
      · <strong>{{!t('waits_now', minutes=ticking(v['waited']))}}</strong>{{' · ' + t('past_its_time', minutes=v['past_time']) if v['past_time'] else ''}}
    % elif v['called_local']:
      % if v['inside'] is not None:
      · <strong>{{!t('inside_since', time=v['called_local'], minutes=ticking(v['inside']))}}</strong>
      % else:
      · {{t('called_in_at', time=v['called_local'])}}
      % end
      · {{t('waited_for', minutes=v['waited'])}}{{' · ' + t('past_its_time', minutes=v['past_time']) if v['past_time'] else ''}}
    % elif state == 'absent':
      {{t('no_show', time='') if v['attendance'] == 'no_show' else t('not_come')}}
    % end
    </td>
    <td>
    % offered = [mark for mark in row_marks[state] if mark == '' or mark in v['marks']]
    % if state == 'absent' and v['attendance'] == 'no_show':
    %   offered = ['']
    % end
    % if offered:
      <form method="post" action="/desk/appointments/{{v['id']}}/attendance" class="quick">
        <input type="hidden" name="csrf" value="{{desk['csrf']}}">
        <input type="hidden" name="back" value="{{here}}">
        % for n, mark in enumerate(offered):
        <button name="mark" value="{{mark}}"{{!' data-row' if n == 0 else ''}}>{{t('undo') if mark == '' else t('mark_finished') if mark == 'seen' else t('mark_' + mark)}}</button>
        % end
      </form>
    % end
    </td>
  </tr>
  % end
  </tbody>
</table>
% end
</section>
% end
