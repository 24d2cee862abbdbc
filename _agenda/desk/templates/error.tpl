<h1>{{t('error') if not message else message}}</h1>
<p><a href="/desk/day">{{t('back')}}</a></p>
