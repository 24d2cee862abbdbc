<h1>{{t('doctors')}}</h1>
% if error:
<p class="error" role="alert">{{error}}</p>
% end
% if left:
<div class="warning" role="alert">
  <p>{{left['doctor']['name']}} · {{t('retire')}} {{left['date']}}</p>
  <p>{{t('left_to_rebook')}}</p>
  <ul>
  % for a in left['appointments']:
    <li><a href="/desk/appointments/{{a['id']}}">{{format_date(a['date'])}} {{a['start']}}</a> · {{a['patient_name']}} · <span class="phone">{{dialled(a['phone'])}}</span></li>
  % end
  % if not left['appointments']:
    <li>{{t('none')}}</li>
  % end
  </ul>
  <form method="post" action="/desk/doctors/{{quote(left['doctor']['id'], safe='')}}/retire">
    <input type="hidden" name="csrf" value="{{desk['csrf']}}">
    <input type="hidden" name="date" value="{{left['date']}}"><input type="hidden" name="confirmed" value="1">
    <button type="submit" class="danger">{{t('retire_anyway')}}</button>
  </form>
</div>
% end
% if made:
<div class="warning" role="alert">
  <p>{{t('feed_made', doctor=made['doctor'])}}</p>
  <p><code>{{made['url']}}</code></p>
</div>
% end
% for d in doctors:
<section class="doctor">
  <h2>{{d['name']}} <small>({{d['speciality_id']}})</small></h2>
  % if d['retired_from']:
  <p>{{t('retired_from')}} {{format_date(d['retired_from'])}}</p>
  % end
  <ul>
  % for h in d['hours']:
    <li>{{weekdays[h['weekday']]}} {{h['start_time']}}-{{h['end_time']}} ({{h['slot_minutes']}} min){{' · ' + center_names.get(h['center_id'], h['center_id']) if h['center_id'] else ''}}</li>
  % end
  </ul>
  <form method="post" action="/desk/doctors/{{quote(d['id'], safe='')}}/retire">
    <input type="hidden" name="csrf" value="{{desk['csrf']}}">
    <label>{{t('retire')}} <input name="date" placeholder="DD/MM/AAAA" required></label>
    <button type="submit">{{t('retire_anyway')}}</button>
  </form>
  <form method="post" action="/desk/doctors/{{quote(d['id'], safe='')}}/feed" class="inline">
    <input type="hidden" name="csrf" value="{{desk['csrf']}}">
    % if d['id'] in with_feeds:
    <span>{{t('feed_since', when=with_feeds[d['id']])}}</span>
    <button name="action" value="new">{{t('feed_renew')}}</button>
    <button name="action" value="revoke" class="danger">{{t('feed_revoke')}}</button>
    % else:
    <button name="action" value="new">{{t('feed_new')}}</button>
    % end
  </form>
</section>
% end
