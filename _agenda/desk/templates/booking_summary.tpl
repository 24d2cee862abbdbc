% if summary:
<dl class="chosen">
% for label, value in summary:
<dt>{{label}}</dt><dd>{{value}}</dd>
% end
</dl>
% end
