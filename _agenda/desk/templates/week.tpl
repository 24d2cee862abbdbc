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
% if legend:
<ul class="legend" aria-label="{{t('legend')}}">
  % for colour, name in legend:
  <li><span class="swatch {{colour}}"></span>{{name or t('no_type')}}</li>
  % end
</ul>
% end
% if doctor:
{{!drawn}}
% else:
<div class="week-grid">
  % for d in week:
  <section class="week-day">
    <h2 class="day-head"><a href="/desk/day?{{urlencode({'date': d['date'], 'centerId': center_id or ''}, safe='/')}}">{{t('weekdays')[d['day'].weekday()]}} {{d['day'].strftime('%d/%m')}}</a></h2>
    % if not d['doctors']:
    <p class="muted">{{t('off')}}</p>
    % end
    % for counts in d['doctors']:
    <p class="doctor"><a href="/desk/week?{{urlencode({'date': d['date'], 'doctorId': counts['id']}, safe='/')}}">{{counts['name']}}</a>
      <span class="counts">{{t('count_appointments')[counts['booked'] != 1].format(count=counts['booked'])}} · {{t('count_free')[counts['free'] != 1].format(count=counts['free'])}}{{!'' if not counts['to_call'] else ' · <span class="call">%s %d</span>' % (t('to_call'), counts['to_call'])}}</span></p>
    % end
    % for a in d['cards']:
    <article class="{{' '.join(filter(None, ('card', a['colour'], a['status'], a['attendance'], 'to-call' if a['to_call'] else '', 'squeezed' if a['squeezed'] else '', 'pending' if a.get('pending') else '')))}}">
      <a href="/desk/appointments/{{a['id']}}" class="who">{{a['start']}} {{a['patient_name']}}</a>
      <span class="doctor">{{a['doctor_name']}}</span>
      <span class="status">{{!'<strong class="pending-mark">' if a.get('pending') else ''}}{{pending(a) if a.get('pending') else ''}}{{!'</strong> · ' if a.get('pending') else ''}}{{t('squeezed') + ' ' if a['squeezed'] else ''}}{{t('to_call') + ' ' if a['to_call'] else ''}}{{t(a['attendance'], time=a['arrived_local']) if a['attendance'] else t(a['status'])}}</span>
    </article>
    % end
    % if d['more']:
    <a class="more" href="/desk/day?{{urlencode({'date': d['date'], 'centerId': center_id or ''}, safe='/')}}">{{t('more_cards', count=d['more'])}}</a>
    % end
  </section>
  % end
</div>
% end
