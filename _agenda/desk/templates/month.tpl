<div class="toolbar">
  <form method="get" action="/desk/month" class="pick">
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
    <label>{{t('month')}}
      <select name="month" id="month">
        % for each in reachable:
        <option value="{{'%02d/%d' % (each.month, each.year)}}" {{'selected' if each == first else ''}}>{{t('month_of', month=t('month_names')[each.month - 1], year=each.year)}}</option>
        % end
      </select>
    </label>
    <label>{{t('visit_type')}}
      <select name="typeId">
        <option value="">{{t('month_any_type')}}</option>
        % for key, name in types:
        <option value="{{key}}" {{'selected' if key == type_id else ''}}>{{name}}</option>
        % end
      </select>
    </label>
    <button type="submit">{{t('show')}}</button>
  </form>
  <nav class="days">
    <a href="{{previous}}" id="previous" aria-label="{{t('previous_month')}}">&lt;</a>
    <strong>{{t('doctor_month', doctor=doctor['name']) if doctor else t('center_month')}} · {{t('month_of', month=t('month_names')[first.month - 1], year=first.year)}}</strong>
    % if following:
    <a href="{{following}}" id="following" aria-label="{{t('next_month')}}">&gt;</a>
    % end
  </nav>
</div>
<h1 class="printed">{{clinic_name}} · {{t('doctor_month', doctor=doctor['name']) if doctor else t('center_month') + ' ' + center_name}} · {{t('month_of', month=t('month_names')[first.month - 1], year=first.year)}}</h1>
<p class="month-key"><span class="mk booked"></span>{{t('month_booked')}} <span class="mk free"></span>{{t('month_free')}} <span class="mk shut"></span>{{t('month_closed')}} · {{t('month_hint')}}
% if type_id:
<strong class="fits-count">{{t('month_fits_days', type=dict(types).get(type_id, type_id), count=sum(1 for drawn in month.values() if drawn['fits']))}}</strong>
% end
</p>
% if ahead:
<p class="next-free-found">{{t('next_free_none', date=ahead['until']) if 'until' in ahead else t('next_free_found', when=t('weekdays')[ahead['slot'].date.weekday()] + ' ' + ahead['slot'].date_text + ' ' + ahead['slot'].time, doctor=ahead['slot'].doctor_name, center=ahead['center'])}}
  % if 'address' in ahead:
  <a href="{{ahead['address']}}" id="ahead-open">{{t('next_free_open')}}</a>
  % end
</p>
% end
<table class="month{{' typed' if type_id else ''}}">
  <thead><tr>
    % for name in t('weekdays'):
    <th scope="col">{{name}}</th>
    % end
  </tr></thead>
  <tbody>
  % for week in weeks:
  <tr>
    % for day in week:
    % if day is None:
    <td class="blank"></td>
    % else:
    % drawn = month[day]
    % opened = drawn['doctors'][0]['center_id'] if doctor and drawn['doctors'] else center_id
    <td class="{{' '.join(filter(None, ('day', 'past' if day < today else '', 'today' if day == today else '', 'beyond' if day > last_day else '', 'fits' if drawn['fits'] else '', 'holiday' if any(c['holiday'] for c in drawn['closures']) else '')))}}">
      <a class="date" href="{{day_address(day, opened, doctor['id'] if doctor else None)}}">{{day.day}}</a>{{!' <span class="fits-mark">✓ %s</span>' % t('month_fits') if drawn['fits'] else ''}}
      % for c in drawn['closures']:
      <p class="closure">{{t('holiday') if c['holiday'] else t('month_closed')}}{{' ' + c['hours'] if c['hours'] else ''}}{{' · ' + c['doctor'] if c['doctor'] and not doctor else ''}}{{': ' + c['reason'] if c['reason'] else ''}}</p>
      % end
      % for d in drawn['doctors']:
      % booked, free = share(d['booked'], d['hours']), share(d['free'], d['hours'])
      % shut = min(share(d['closed'], d['hours']), 100 - min(100, booked + free))
      <a class="doc" href="{{day_address(day, d['center_id'] or opened, d['id'])}}" title="{{d['name']}}: {{span(d['booked'])}} {{t('month_booked')}} · {{span(d['free'])}} {{t('month_free')}} · {{span(d['closed'])}} {{t('month_closed')}} {{t('month_worked', hours=span(d['hours']))}}">
        <span class="who">{{places.get(d['center_id'], d['center_id'] or '') if doctor else d['name']}}</span>
        <span class="bar"><span class="booked w{{min(booked, 100)}}"></span><span class="free w{{min(free, 100 - min(booked, 100))}}"></span><span class="shut w{{shut}}"></span></span>
        <span class="hours"><span class="free-time">{{span(d['free'])}} {{t('month_free')}}</span> <span class="booked-time">{{span(d['booked'])}} {{t('month_booked')}}</span></span>
      </a>
      % end
    </td>
    % end
    % end
  </tr>
  % end
  </tbody>
</table>
