% row = lambda minute: minute - timeline.first + 2
<div class="timeline{{' with-places' if places else ''}}" data-first="{{timeline.first}}">
<div class="axis-head c1 r1"></div>
  % for n, heading in enumerate(headings):
  % column = timeline.columns[n]
<div class="col-head c{{n + 2}} r1" data-doctor="{{column['doctor_id']}}" data-date="{{format_date(column['day'])}}" data-step="{{min(column['slot_minutes'] or [5])}}" data-starts="{{'|'.join('' if part is None else str(part) for run in column['starts'] for part in run)}}"><span class="name">{{heading}}</span>
    % if places:
<span class="where" title="{{' · '.join(full for full, _ in places[n])}}">{{' · '.join(short for _, short in places[n])}}</span>
    % end
    % if today <= column['day'].isoformat() <= last_day:
<a class="squeeze" href="/desk/book?{{urlencode({'doctorId': column['doctor_id'], 'date': format_date(column['day']), 'squeeze': '1', **({'centerId': center_id} if center_id else {})}, safe='/')}}" title="{{t('squeeze_title')}}" aria-label="{{t('squeeze_title')}}">⚡<span class="word"> {{t('squeeze')}}</span></a>
    % end
</div>
  % end
  % for minute, label in timeline.ticks:
<div class="tick c1 r{{row(minute)}} h15">{{label}}</div>
  % end
  % for n, column in enumerate(timeline.columns):
  % col = n + 2
  % for b in column['blocks']:
  % span = max(1, min(b.end, timeline.last) - b.start)
  % if b.kind == 'free':
  % slot = {'doctorId': column['doctor_id'], 'date': format_date(column['day']), 'time': b.time, **({'centerId': b.center_id} if b.center_id else {}), **({'typeId': b.type_id} if b.type_id else {})}
  % count = waited(column, b)
<a class="block free {{'waited ' if count else ''}}c{{col}} r{{row(b.start)}} h{{span}}" href="/desk/book?{{urlencode(slot, safe='/:')}}" data-slot="{{b.time}}"{{!' data-type="%s"' % escape(b.type_id) if b.type_id else ''}}>{{b.time}} + {{t('free')}}{{' · ' + b.type_name if b.type_name else ''}}{{' · ' + t('waited', count=count) if count else ''}}</a>
  % else:
<div class="block {{b.kind}} c{{col}} r{{row(b.start)}} h{{span}}">{{'' if b.quiet else b.time + ' ' + t(b.kind) + (': ' + b.detail if b.detail else '')}}</div>
  % end
  % end
  % for a in column['cards']:
  % span = max(1, min(a['to'], timeline.last) - a['from'])
<article class="{{' '.join(filter(None, ('card', a['colour'], a['status'], a['attendance'], 'to-call' if a['to_call'] else '', 'squeezed' if a['squeezed'] else '', 'overlap' if a['overlap_accepted'] else '', 'pending' if a.get('pending') else '')))}} c{{col}} r{{row(a['from'])}} h{{span}}{{' lanes%d lane%d' % (a['lanes'], a['lane']) if a['lanes'] > 1 else ''}}">
<a href="/desk/appointments/{{a['id']}}" class="who">{{a['start']}} {{a['patient_name']}}</a>
    % if not a['attendance'] and a['marks']:
<form method="post" action="/desk/appointments/{{a['id']}}/attendance" class="quick">
<input type="hidden" name="csrf" value="{{desk['csrf']}}">
% for mark in ('arrived', 'no_show'):
% if mark in a['marks']:
<button name="mark" value="{{mark}}">{{t('mark_' + mark)}}</button>
% end
% end
</form>
    % end
    % if a['squeezed']:
<strong class="squeezed-mark">{{t('squeezed')}}</strong>
    % end
    % if a['overlap_accepted']:
<strong class="overlap-mark">{{t('overlap_mark')}}</strong>
    % end
    % if a['type_name'] or a['holds']:
<span class="kind">{{' · '.join(part for part in (a['type_name'], a['holds']) if part)}}</span>
% end
% if a['series_id']:
<span class="series">{{t('series_place', place=a['series_place'], count=a['series_count'])}}</span>
    % end
    % if a['to_call']:
<strong class="call">{{t('to_call')}}</strong>
    % end
    % if a['attendance']:
<span class="att">{{t(a['attendance'], time=a['arrived_local'])}}</span>
    % else:
<span class="status">{{t(a['status'])}}</span>
    % end
    % if a.get('pending'):
<strong class="pending-mark">{{pending(a)}}</strong>
    % end
<span class="phone">{{dialled(a['phone'])}}</span>{{' · ' + a['insurance_id'] if a['insurance_id'] else ''}}{{' · ' + a['reason'] if a['reason'] else ''}}
<span class="by">{{who_booked(t, a['booked_by'])}}</span>
</article>
% if a['busy_to'] > a['to']:
<div class="block pause c{{col}} r{{row(a['to'])}} h{{max(1, min(a['busy_to'], timeline.last) - a['to'])}}">{{t('pause')}}</div>
% end
  % end
  % end
  % if now is not None and timeline.first <= now < timeline.last:
  % for n in range(len(timeline.columns)):
<div class="now-line c{{n + 2}} r{{row(now)}} h1"></div>
  % end
<div id="now" class="now c1 r{{row(now_label_at(now))}} h{{now_rows}}">{{hhmm(now)}} {{t('now')}}</div>
  % end
</div>
<p id="drag-news" class="drag-news" aria-live="polite" data-to="{{t('drag_to')}}" data-length="{{t('drag_length')}}" data-sending="{{t('drag_sending')}}" data-left="{{t('drag_left')}}">{{t('drag_hint')}}</p>
<script src="/desk/drag.js" defer></script>
