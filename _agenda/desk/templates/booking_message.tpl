{{!head}}
<h1>{{t(title)}}</h1>
<p role="status" class="said">{{t(key, **values)}}</p>
% if key == 'web_sent':
<p>{{t('web_sent_spam')}}</p>
% end
% if again:
<p><a class="back" href="/reservar?idioma={{lang}}">{{t('web_start_again')}}</a></p>
% end
</main></body></html>
