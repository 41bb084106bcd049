# sigv4_reference.py: the independent SigV4 implementation (Python's hmac, hashlib and
# urllib, written from AWS's documentation) that computed the non-AWS vectors of
# sigv4_test.c. Its first two lines print AWS's own published answers, which pin it.
# Run: python3 tests/runtime/net/sigv4_reference.py (not part of the suite).
import hashlib, hmac, urllib.parse
def H(b): return hashlib.sha256(b).hexdigest()
def mac(k, m): return hmac.new(k, m.encode(), hashlib.sha256).digest()
def sign(method, path, query, headers, body, ak, sk, tok, region, service, amz):
    hs = dict((k.lower(), ' '.join(v.split())) for k, v in headers.items())
    hs['x-amz-date'] = amz
    if tok: hs['x-amz-security-token'] = tok
    names = sorted(hs)
    cpath = urllib.parse.quote(path, safe='/~')
    pairs = []
    for p in [x for x in query.split('&') if x]:
        k, _, v = p.partition('=')
        pairs.append((urllib.parse.quote(urllib.parse.unquote(k), safe='-_.~'), urllib.parse.quote(urllib.parse.unquote(v), safe='-_.~')))
    cq = '&'.join(k + '=' + v for k, v in sorted(pairs))
    creq = '\n'.join([method, cpath, cq, ''.join(n + ':' + hs[n] + '\n' for n in names), ';'.join(names), H(body)])
    date = amz[:8]
    scope = f'{date}/{region}/{service}/aws4_request'
    sts = '\n'.join(['AWS4-HMAC-SHA256', amz, scope, H(creq.encode())])
    k = mac(mac(mac(mac(('AWS4' + sk).encode(), date), region), service), 'aws4_request')
    return hmac.new(k, sts.encode(), hashlib.sha256).hexdigest(), ';'.join(names)
SK='wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY'
print(sign('GET','/','',{'Host':'example.amazonaws.com'},b'','AKIDEXAMPLE',SK,None,'us-east-1','service','20150830T123600Z'))
print(sign('GET','/','Param2=value2&Param1=value1',{'Host':'example.amazonaws.com'},b'','AKIDEXAMPLE',SK,None,'us-east-1','service','20150830T123600Z'))
body=b'{"messages":[{"role":"user","content":[{"text":"hi"}]}]}'
print(sign('POST','/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse-stream','',{'Host':'bedrock-runtime.us-west-2.amazonaws.com','Content-Type':'application/json','Accept':'application/vnd.amazon.eventstream'},body,'AKIDEXAMPLE',SK,'FQoGZXIvYXdzEXAMPLETOKEN','us-west-2','bedrock','20250102T030405Z'))
print(sign('GET','/','b=%7e&a=x%2fy&a=1&c',{'Host':'example.amazonaws.com'},b'','AKIDEXAMPLE',SK,None,'us-east-1','service','20150830T123600Z'))
