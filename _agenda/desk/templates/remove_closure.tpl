<h1>{{t('remove_closure_title', reason=closure['reason'] or '')}}</h1>
<p>{{closure['doctor_name'] or t('everyone')}} · {{center_names.get(closure['center_id'], closure['center_id']) if closure['center_id'] else t('all_centers')}} · {{format_date(closure['date_from'])}}–{{format_date(closure['date_to'])}}
{{(closure['start_time'] + '–' + closure['end_time']) if closure['start_time'] else ''}}</p>
<p>{{t('remove_closure_hint')}}</p>
<form method="post" action="/desk/closures/{{closure['id']}}/remove">
  <input type="hidden" name="csrf" value="{{desk['csrf']}}">
  <button type="submit" class="danger">{{t('remove')}}</button> <a href="/desk/closures">{{t('keep')}}</a>
</form>
