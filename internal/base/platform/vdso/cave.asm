	.intel_syntax noprefix
	.text
# Cave layout (offsets from the cave's start):
#   0 magic "FCSKEW02"
#   8 wall clock (REALTIME, REALTIME_COARSE): rbase, fbase, mult
#  32 mono clock (MONOTONIC, MONOTONIC_COARSE): rbase, fbase, mult
#  56 the original first 16 bytes of clock_gettime, gettimeofday, time
# 104 code
# A clock reads fbase + ((t - rbase) * mult) >> 32, t the true reading in ns.
cave:
	.ascii "FCSKEW02"
wall:	.quad 0, 0, 0
mono:	.quad 0, 0, 0
orig:	.zero 48
# adjust: rax = true ns, r8 = a clock's parameters; returns rax = skewed ns.
# Clobbers rdx.
adjust:
	sub rax, [r8]
	imul qword ptr [r8+16]
	shrd rax, rdx, 32
	add rax, [r8+8]
	ret
# split: rax = ns (not negative) -> rax = seconds, rdx = ns within.
# Clobbers rcx.
split:
	xor edx, edx
	mov ecx, 1000000000
	div rcx
	ret
# clock_gettime(id, ts)
clock_gettime:
	push rdi
	push rsi
	mov eax, 228
	syscall
	pop rsi
	pop rdi
	test eax, eax
	jnz 1f
	lea r8, [rip+wall]
	cmp edi, 0
	je 2f
	cmp edi, 5
	je 2f
	lea r8, [rip+mono]
	cmp edi, 1
	je 2f
	cmp edi, 6
	je 2f
1:	ret
2:	imul rax, [rsi], 1000000000
	add rax, [rsi+8]
	call adjust
	call split
	mov [rsi], rax
	mov [rsi+8], rdx
	xor eax, eax
	ret
# gettimeofday(tv, tz)
gettimeofday:
	push rdi
	mov eax, 96
	syscall
	pop rdi
	test eax, eax
	jnz 1f
	test rdi, rdi
	jz 1f
	imul rax, [rdi], 1000000000
	imul rcx, [rdi+8], 1000
	add rax, rcx
	lea r8, [rip+wall]
	call adjust
	call split
	mov [rdi], rax
	mov rax, rdx
	xor edx, edx
	mov ecx, 1000
	div rcx
	mov [rdi+8], rax
	xor eax, eax
1:	ret
# time(t)
time:
	push rdi
	xor edi, edi
	mov eax, 201
	syscall
	imul rax, rax, 1000000000
	lea r8, [rip+wall]
	call adjust
	call split
	pop rdi
	test rdi, rdi
	jz 1f
	mov [rdi], rax
1:	ret
end:
