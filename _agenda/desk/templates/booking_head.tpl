<!DOCTYPE html>
<html lang="{{lang}}">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow"><title>{{t('web_title')}} · {{clinic_name}}</title>
<link rel="stylesheet" href="/reservar/reservar.css"></head>
<body><header class="band"><p class="clinic">{{clinic_name}}</p>
% if switch:
<a class="switch" href="{{switch}}" lang="{{'en' if lang == 'es' else 'es'}}">{{t('web_language')}}</a>
% end
</header><main>
