<h1>{{t('series_title')}}</h1>
<p>{{patient['name']}} {{patient['surname'] or ''}} · {{doctor['name']}} · {{t('series_from', date=slot['date'] or '', time=slot['time'] or '')}}</p>
% if error:
<p class="error" role="alert">{{error}}</p>
% end
<form method="post" action="/desk/series" class="inline" autocomplete="off">
  <input type="hidden" name="csrf" value="{{desk['csrf']}}">
  % for key in ('doctorId', 'date', 'time', 'centerId', 'patientId'):
  % if slot[key]:
  <input type="hidden" name="{{key}}" value="{{slot[key]}}">
  % end
  % end
  <input type="hidden" name="reason" value="{{typed['reason']}}"><input type="hidden" name="insuranceId" value="{{typed['insuranceId']}}">
  <label>{{t('series_every')}} <input name="n" value="{{asked['n']}}" size="2" inputmode="numeric"></label>
  <label><select name="unit">
    <option value="w" {{'selected' if asked['unit'] == 'w' else ''}}>{{t('weeks')}}</option>
    <option value="d" {{'selected' if asked['unit'] == 'd' else ''}}>{{t('days')}}</option>
  </select></label>
  <label>{{t('series_count')}} <input name="count" value="{{asked['count']}}" size="2" inputmode="numeric"></label>
  <button name="step" value="preview">{{t('series_preview')}}</button>
</form>
% if sessions:
<table>
  <thead><tr><th>#</th><th>{{t('date')}}</th><th>{{t('status')}}</th></tr></thead>
  <tbody>
  % for n, s in enumerate(sessions, 1):
  <tr class="{{'free' if s.slot else 'taken'}}"><td>{{n}}/{{len(sessions)}}</td><td>{{t('weekdays')[s.day.weekday()]}} {{format_date(s.day)}}</td>
    <td>
    % if s.slot:
    {{s.slot.time}} {{t('free')}}
    % elif s.nearest:
    {{t('reason_' + (s.reason or 'taken'))}} → {{t('series_nearest', date=s.nearest.date_text, time=s.nearest.time)}}
    % else:
    {{t('reason_' + (s.reason or 'taken'))}} → {{t('series_none')}}
    % end
    </td></tr>
  % end
  </tbody>
</table>
% if choices:
<form method="post" action="/desk/series" class="series-book">
  <input type="hidden" name="csrf" value="{{desk['csrf']}}">
  % for key in ('doctorId', 'date', 'time', 'centerId', 'patientId'):
  % if slot[key]:
  <input type="hidden" name="{{key}}" value="{{slot[key]}}">
  % end
  % end
  % for key in ('n', 'unit', 'count'):
  <input type="hidden" name="{{key}}" value="{{asked[key]}}">
  % end
  <input type="hidden" name="reason" value="{{typed['reason']}}"><input type="hidden" name="insuranceId" value="{{typed['insuranceId']}}">
  % for take, booked, left in choices:
  <button name="take" value="{{take}}">{{t('series_take_' + take, count=booked, left=left)}}</button>
  % end
</form>
% else:
<p class="warning">{{t('series_no_way')}}</p>
% end
% end
