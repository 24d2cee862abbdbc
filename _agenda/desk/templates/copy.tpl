<!doctype html>
<html lang="es">
<head>
<meta charset="utf-8">
<title>Copia de sus datos · paciente {{patient['id']}}</title>
<style>
body { font-family: sans-serif; max-width: 60rem; margin: 2rem auto; line-height: 1.4; }
table { border-collapse: collapse; width: 100%; margin-bottom: 1.5rem; }
th, td { border: 1px solid #999; padding: .25rem .5rem; text-align: left; vertical-align: top; }
</style>
</head>
<body>
<h1>Copia de sus datos</h1>
<p>Todo lo que la agenda de la clínica guarda sobre usted, a {{when(generated)}}. La misma información, para un programa, está en la copia en formato JSON.</p>
<h2>Sus datos</h2>
<table>
  <tr><th>Número de paciente</th><td>{{patient['id']}}</td></tr>
  % for said, column in details:
  % value = patient[column.copy]
  <tr><th>{{said}}</th><td>{{shown(column, value)}}</td></tr>
  % end
  % if patient.get('messagesSince'):
  <tr><th>Su elección de mensajes</th><td>{{when(patient['messagesSince'])}}, {{sources(patient['messagesBy'] or '')}}</td></tr>
  % end
  % if patient['guardian']:
  <tr><th>Tutor</th><td>{{patient['guardian']}} ({{patient['guardianNif'] or ''}})</td></tr>
  % end
  <tr><th>Alta</th><td>{{when(patient['registeredAt'])}}</td></tr>
  % if patient['blockedAt']:
  <tr><th>Supresión solicitada</th><td>{{when(patient['blockedAt'])}}; datos bloqueados hasta {{day(patient['erasableFrom'])}}</td></tr>
  % end
</table>
<h2>Sus citas</h2>
% if not appointments:
<p>Ninguna.</p>
% else:
<table>
  <tr><th>Fecha</th><th>Hora</th><th>Médico</th><th>Centro</th><th>Motivo</th><th>Nota de recepción</th><th>Estado</th></tr>
  % for a in appointments:
  <tr><td>{{day(a['date'])}}</td><td>{{a['start']}}–{{a['end']}}</td><td>{{a['doctor_name']}}</td><td>{{a['center_id'] or ''}}</td><td>{{a['reason'] or ''}}</td><td>{{a['note'] or ''}}</td><td>{{statuses.get(a['status'], a['status'])}}</td></tr>
  % end
</table>
% end
% if waitingList:
<h2>Lista de espera</h2>
<table>
  <tr><th>Desde</th><th>Busca</th><th>Entre</th><th>Nota</th><th>Terminó</th></tr>
  % for w in waitingList:
  <tr><td>{{when(w['created_at'])}}</td><td>{{w['doctor_id'] or w['speciality_id']}}{{' · ' + w['center_id'] if w['center_id'] else ''}}</td><td>{{day(w['date_from'])}}–{{day(w['date_to'])}}</td><td>{{w['note'] or ''}}</td><td>{{when(w['ended_at']) if w['ended_at'] else ''}}</td></tr>
  % end
</table>
% end
<h2>Historial de cambios</h2>
<table>
  <tr><th>Cuándo</th><th>Qué</th><th>Quién</th></tr>
  % for e in history:
  <tr><td>{{when(e['at'])}}</td><td>{{actions.get(e['action'], e['action'])}}{{' (cita ' + str(e['id']) + ')' if e['entity'] == 'appointment' else ''}}</td><td>{{sources(e['source'])}}</td></tr>
  % end
</table>
<h2>Quién ha visto sus datos</h2>
<table>
  <tr><th>Cuándo</th><th>Quién</th><th>Qué</th><th>Veces</th><th>Resultado</th></tr>
  % for r in accesses:
  <tr><td>{{when(r['first'])}}{{' – ' + when(r['last'])[-5:] if r['last'] != r['first'] else ''}}</td><td>{{sources(r['reader'])}}</td><td>{{kinds.get(r['kind'], r['kind'])}}</td><td>{{r['reads']}}</td><td>{{'permitido' if r['allowed'] else 'denegado'}}</td></tr>
  % end
</table>
</body>
</html>
