<!DOCTYPE html>
<html lang="{{lang}}">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow"><title>{{t('link_title')}}</title>
<link rel="stylesheet" href="/cita/cita.css"></head>
<body><main>
