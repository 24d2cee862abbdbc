<!DOCTYPE html>
<html lang="{{lang}}">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>{{subject}}</title></head>
<body style="margin:0;padding:0;background:#f4f6f8">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" bgcolor="#f4f6f8">
<tr><td align="center" style="padding:16px 8px">
<table role="presentation" width="560" cellpadding="0" cellspacing="0" border="0" bgcolor="#ffffff" style="width:100%;max-width:560px;background:#ffffff">
<tr><td style="padding:24px;font-family:Arial,Helvetica,sans-serif;font-size:16px;line-height:1.45;color:#1d2733">
<p style="margin:0 0 12px">{{hello}}</p>
<p style="margin:0 0 16px">{{lead}}</p>
% for block in blocks:
<table role="presentation" cellpadding="0" cellspacing="0" border="0" style="margin:0 0 16px">
% for label, value in block:
<tr><td valign="top" style="padding:4px 16px 4px 0;color:#55606c;font-family:Arial,Helvetica,sans-serif;font-size:16px">{{label}}</td><td valign="top" style="padding:4px 0;font-weight:bold;font-family:Arial,Helvetica,sans-serif;font-size:16px;color:#1d2733">{{value}}</td></tr>
% end
</table>
% end
% if link_words:
<p style="margin:0 0 8px">{{link_words}}</p>
<table role="presentation" cellpadding="0" cellspacing="0" border="0" style="margin:0 0 8px"><tr>
<td bgcolor="#1f5f99" style="border-radius:6px"><a href="{{link}}" style="display:inline-block;border-style:solid;border-color:#1f5f99;border-width:12px 18px;border-radius:6px;background:#1f5f99;color:#ffffff;text-decoration:none;font-family:Arial,Helvetica,sans-serif;font-size:16px;font-weight:bold">{{button}}</a></td>
</tr></table>
<p style="margin:0 0 16px;font-size:14px;color:#55606c;overflow-wrap:anywhere">{{link}}</p>
% end
% if call:
<p style="margin:0 0 16px">{{!call}}</p>
% end
<p style="margin:0 0 16px;color:#55606c">{{attached}}</p>
<p style="margin:0">{{clinic}}</p>
</td></tr>
</table>
% if stop:
<p style="max-width:560px;margin:12px auto 0;font-family:Arial,Helvetica,sans-serif;font-size:14px;color:#55606c">{{stop_words}} <a href="{{stop}}" style="color:#55606c;overflow-wrap:anywhere">{{stop}}</a></p>
% end
</td></tr>
</table>
</body>
</html>
