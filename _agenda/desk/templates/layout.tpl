<!doctype html>
<html lang="{{desk['lang']}}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{t('app')}}</title>
<link rel="stylesheet" href="/desk/desk.css">
<script src="/desk/desk.js" defer></script>
</head>
<body{{!(' data-version="%d"' % version) if defined('version') and version is not None else ''}}{{!' class="fill"' if get('fill') else ''}}>
% if desk['name']:
<header>
  <nav>
    <a href="/desk/day" class="brand">{{t('app')}}</a>
    <a href="/desk/day">{{t('day')}}</a>
    <a href="/desk/week">{{t('week')}}</a>
    <a href="/desk/month">{{t('month')}}</a>
    <a href="/desk/rooms">{{t('rooms_nav')}}</a>
    <a href="/desk/waiting">{{t('waiting_nav')}}</a>
    <a href="/desk/calls">{{t('calls')}}</a>
    <a href="/desk/waitlist">{{t('waitlist')}}</a>
    <a href="/desk/patients">{{t('patients_nav')}}</a>
    <a href="/desk/closures">{{t('closures')}}</a>
    % if to_verify:
    <a href="/desk/verify" class="to-verify">{{t('pending_reception')}} <span class="count">{{to_verify}}</span></a>
    % end
    % if desk['role'] == 'admin':
    <a href="/desk/doctors">{{t('doctors')}}</a>
    <a href="/desk/report">{{t('report')}}</a>
    <a href="/desk/access">{{t('access_nav')}}</a>
    % end
  </nav>
  % if not defined('q'):
  <form method="post" action="/desk/patients" class="search" autocomplete="off" role="search">
    <input type="hidden" name="csrf" value="{{desk['csrf']}}">
    <input name="q" id="q" autocomplete="off" placeholder="{{t('search_hint')}}" aria-label="{{t('search')}}" autofocus>
    <button type="submit">{{t('find')}}</button>
  </form>
  % end
  <form method="post" action="/desk/logout" class="logout">
    <input type="hidden" name="csrf" value="{{desk['csrf']}}">
    <span>{{desk['name']}}</span> <button type="submit">{{t('logout')}}</button>
  </form>
</header>
% end
<main>
% if flash:
<p class="flash" role="status">{{flash}}</p>
% end
{{!body}}
</main>
</body>
</html>
