<div class="toolbar">
  <form method="get" action="/desk/rooms" class="pick">
    % if centers:
    <label>{{t('center')}}
      <select name="centerId">
        % for center in centers:
        <option value="{{center['id']}}" {{'selected' if center['id'] == center_id else ''}}>{{center['name']}}</option>
        % end
      </select>
    </label>
    % end
    <label>{{t('date')}} <input name="date" id="date" value="{{format_date(day)}}" size="10"></label>
    <button type="submit">{{t('show')}}</button>
  </form>
  <nav class="days">
    <a href="{{previous}}" id="previous" aria-label="{{t('previous')}}">&lt;</a>
    <strong>{{t('weekdays')[day.weekday()]}} {{format_date(day)}}</strong>
    <a href="{{following}}" id="following" aria-label="{{t('next')}}">&gt;</a>
  </nav>
</div>
<h1>{{t('rooms_title')}}</h1>
% if unplaced:
<section class="notice" id="unplaced">
  <h2>{{t('rooms_unplaced')}}</h2>
  <ul>
    % for visit in unplaced:
    <li><a href="/desk/appointments/{{visit.id}}">{{t('rooms_unplaced_visit').format(id=visit.id)}}</a>: {{format_date(visit.date)}} {{visit.time}} · {{doctor_names.get(visit.doctor_id, visit.doctor_id)}}</li>
    % end
  </ul>
</section>
% end
% if not resources:
<p>{{t('rooms_none')}}</p>
% end
% for resource in resources:
<section class="resource" id="resource-{{resource['id']}}">
  <h2>{{resource['name']}} <small>{{t('room') if resource['is_room'] else t('machine')}}{{(' · ' + resource['category']) if resource['category'] else ''}}</small></h2>
  % if resource['placed']:
  <p>{{t('rooms_placed')}}: {{', '.join('%s %s–%s' % place for place in resource['placed'])}}</p>
  % end
  % if not resource['held']:
  <p>{{t('rooms_free')}}</p>
  % else:
  <table>
    <thead><tr><th>{{t('time')}}</th><th>{{t('field_typeId')}}</th><th>{{t('doctor')}}</th><th>{{t('patient')}}</th></tr></thead>
    <tbody>
    % for key, (time, until) in resource['held'].items():
    % record = records.get(key)
    <tr><td>{{time}}–{{until}}</td>
      % if record:
      <td>{{record['type_name'] or ''}}</td><td>{{record['doctor_name']}}</td>
      <td><a href="/desk/appointments/{{key}}">{{record['patient_name']}}</a></td>
      % else:
      <td></td><td></td><td>{{t('rooms_held')}}</td>
      % end
    </tr>
    % end
    </tbody>
  </table>
  % end
</section>
% end
