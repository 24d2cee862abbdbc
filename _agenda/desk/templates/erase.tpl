<h1>{{t('erase_title', patient=f"{patient['name']} {patient['surname'] or ''}".strip())}}</h1>
% if preview['erasable_from'] <= today:
<p>{{t('erase_now_hint')}}</p>
% else:
<p>{{t('erase_hint', date=format_date(preview['erasable_from']))}}</p>
% end
% if preview['cancelled']:
<p>{{t('erase_cancels')}}</p>
<ul>
% for a in preview['cancelled']:
  <li>{{format_date(a['date'])}} {{a['time']}} · {{a['doctor_id']}}</li>
% end
</ul>
% end
<p>{{t('erase_notice', id=patient['id'])}}</p>
<form method="post" action="/desk/patients/{{patient['id']}}/erase">
  <input type="hidden" name="csrf" value="{{desk['csrf']}}">
  <button type="submit">{{t('erase_confirm')}}</button>
  <a href="/desk/patients/{{patient['id']}}">{{t('patient')}}</a>
</form>
