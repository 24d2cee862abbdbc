{{!head}}
<h1>{{t('link_title')}}</h1>
<p role="status">{{t(key)}}</p>
</main></body></html>
