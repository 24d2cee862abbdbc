<!DOCTYPE html>
<html lang="{{lang}}">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>{{subject}}</title></head>
<body style="margin:0;padding:16px;background:#f4f6f8;font-family:Arial,Helvetica,sans-serif;color:#1d2733">
<div style="max-width:560px;margin:0 auto;background:#ffffff;border-radius:8px;padding:24px">
<p style="margin:0 0 12px">{{hello}}</p>
<p style="margin:0 0 16px">{{lead}}</p>
% for block in blocks:
<table role="presentation" style="border-collapse:collapse;margin:0 0 16px;font-size:16px">
% for label, value in block:
<tr><th scope="row" style="text-align:left;padding:4px 16px 4px 0;color:#55606c;font-weight:normal">{{label}}</th><td style="padding:4px 0;font-weight:bold">{{value}}</td></tr>
% end
</table>
% end
% if link_words:
<p style="margin:0 0 8px">{{link_words}}</p>
<p style="margin:0 0 8px"><a href="{{link}}" style="display:inline-block;background:#1f5f99;color:#ffffff;text-decoration:none;padding:12px 18px;border-radius:6px">{{button}}</a></p>
<p style="margin:0 0 16px;font-size:13px;color:#55606c;word-break:break-all">{{link}}</p>
% end
% if call:
<p style="margin:0 0 16px">{{call}}</p>
% end
<p style="margin:0 0 16px;color:#55606c">{{attached}}</p>
<p style="margin:0">{{clinic}}</p>
</div>
<p style="max-width:560px;margin:12px auto 0;font-size:13px;color:#55606c;word-break:break-all">{{stop_words}} <a href="{{stop}}" style="color:#55606c">{{stop}}</a></p>
</body>
</html>
