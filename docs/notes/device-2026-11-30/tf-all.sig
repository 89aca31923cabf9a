# superopt signatures v1
attention q=[1,12,128,64] k=[1,12,64,128] v=[1,12,128,64] s=[] b=[1,1,128,128] guard=1
attention q=[1,128,1536] k=[1,128,1536] v=[1,128,1536] s=[] b=[1,8,128,128] guard=0 heads=8 cols=[1024,512,0] hdim=[64,64]
attention q=[1,128,1536] k=[1,128,1536] v=[1,128,1536] s=[] b=[1,8,128,128] guard=0 heads=8 cols=[512,0,1024] hdim=[64,64]
attention q=[1,128,1536] k=[1,128,1536] v=[1,128,768] s=[] b=[1,1,128,128] guard=1 heads=12 cols=[768,0,0] hdim=[64,64]
attention q=[1,128,1536] k=[1,128,768] v=[1,128,1536] s=[] b=[1,1,128,128] guard=1 heads=12 cols=[768,0,0] hdim=[64,64]
attention q=[1,128,2304] k=[1,128,2304] v=[1,128,2304] s=[] b=[1,1,128,128] guard=1 heads=12 cols=[1536,0,768] hdim=[64,64]
attention q=[1,128,2304] k=[1,128,2304] v=[1,128,2304] s=[] b=[1,1,128,128] guard=1 heads=12 cols=[1536,768,0] hdim=[64,64]
attention q=[1,128,2304] k=[1,128,2304] v=[1,128,2304] s=[] b=[1,1,128,128] guard=1 heads=12 cols=[768,0,1536] hdim=[64,64]
attention q=[1,128,512] k=[1,128,1024] v=[1,128,1024] s=[] b=[1,8,128,128] guard=0 heads=8 cols=[0,512,0] hdim=[64,64]
attention q=[1,128,512] k=[1,128,512] v=[1,128,512] s=[] b=[1,8,128,128] guard=0 heads=8 cols=[0,0,0] hdim=[64,64]
attention q=[1,128,768] k=[1,128,1536] v=[1,128,1536] s=[] b=[1,1,128,128] guard=1 heads=12 cols=[0,768,0] hdim=[64,64]
attention q=[1,128,768] k=[1,128,768] v=[1,128,768] s=[] b=[1,1,128,128] guard=1 heads=12 cols=[0,0,0] hdim=[64,64]
attention q=[1,197,2304] k=[1,197,2304] v=[1,197,2304] s=[] guard=0 heads=12 cols=[0,768,1536] hdim=[64,64]
attention q=[1,49,1536] k=[1,49,1536] v=[1,49,1536] s=[] b=[1,16,49,49] guard=0 heads=16 cols=[0,512,1024] hdim=[32,32]
attention q=[1,49,2304] k=[1,49,2304] v=[1,49,2304] s=[] b=[1,24,49,49] guard=0 heads=24 cols=[0,768,1536] hdim=[32,32]
attention q=[1,8,128,64] k=[1,8,64,128] v=[1,8,128,64] s=[] b=[1,1,128,128] guard=1
attention q=[1,8,128,64] k=[1,8,64,128] v=[1,8,128,64] s=[] b=[1,8,128,128] guard=0
attention q=[1024,49,192] k=[1024,49,192] v=[1024,49,192] s=[] b=[1,2,49,49] guard=0 heads=2 cols=[0,64,128] hdim=[32,32]
attention q=[1024,49,32] k=[1024,32,49] v=[1024,49,32] s=[] b=[1024,49,49] guard=0
attention q=[128,49,32] k=[128,32,49] v=[128,49,32] s=[] b=[128,49,49] guard=0
attention q=[16,12,128,64] k=[16,12,64,128] v=[16,12,128,64] s=[] b=[16,1,128,128] guard=1
attention q=[16,128,1024] k=[16,128,1024] v=[16,128,512] s=[] b=[16,8,128,128] guard=0 heads=8 cols=[512,0,0] hdim=[64,64]
attention q=[16,128,1024] k=[16,128,512] v=[16,128,1024] s=[] b=[16,8,128,128] guard=0 heads=8 cols=[0,0,512] hdim=[64,64]
attention q=[16,128,1536] k=[16,128,1536] v=[16,128,1536] s=[] b=[16,8,128,128] guard=0 heads=8 cols=[1024,512,0] hdim=[64,64]
attention q=[16,128,1536] k=[16,128,1536] v=[16,128,1536] s=[] b=[16,8,128,128] guard=0 heads=8 cols=[512,0,1024] hdim=[64,64]
attention q=[16,128,1536] k=[16,128,1536] v=[16,128,768] s=[] b=[16,1,128,128] guard=1 heads=12 cols=[768,0,0] hdim=[64,64]
attention q=[16,128,1536] k=[16,128,768] v=[16,128,1536] s=[] b=[16,1,128,128] guard=1 heads=12 cols=[768,0,0] hdim=[64,64]
attention q=[16,128,2304] k=[16,128,2304] v=[16,128,2304] s=[] b=[16,1,128,128] guard=1 heads=12 cols=[1536,768,0] hdim=[64,64]
attention q=[16,128,512] k=[16,128,1024] v=[16,128,1024] s=[] b=[16,8,128,128] guard=0 heads=8 cols=[0,512,0] hdim=[64,64]
attention q=[16,128,512] k=[16,128,512] v=[16,128,512] s=[] b=[16,8,128,128] guard=0 heads=8 cols=[0,0,0] hdim=[64,64]
attention q=[16,128,768] k=[16,128,1536] v=[16,128,1536] s=[] b=[16,1,128,128] guard=1 heads=12 cols=[0,768,0] hdim=[64,64]
attention q=[16,128,768] k=[16,128,768] v=[16,128,768] s=[] b=[16,1,128,128] guard=1 heads=12 cols=[0,0,0] hdim=[64,64]
attention q=[16,49,1536] k=[16,49,1536] v=[16,49,1536] s=[] b=[1,16,49,49] guard=0 heads=16 cols=[0,512,1024] hdim=[32,32]
attention q=[16,49,2304] k=[16,49,2304] v=[16,49,2304] s=[] b=[1,24,49,49] guard=0 heads=24 cols=[0,768,1536] hdim=[32,32]
attention q=[16,49,32] k=[16,32,49] v=[16,49,32] s=[] b=[16,49,49] guard=0
attention q=[16,49,384] k=[16,49,384] v=[16,49,384] s=[] b=[1,4,49,49] guard=0 heads=4 cols=[0,128,256] hdim=[32,32]
attention q=[16,49,576] k=[16,49,576] v=[16,49,576] s=[] b=[16,6,49,49] guard=0 heads=6 cols=[0,192,384] hdim=[32,32]
attention q=[16,8,128,64] k=[16,8,64,128] v=[16,8,128,64] s=[] b=[16,1,128,128] guard=1
attention q=[16,8,128,64] k=[16,8,64,128] v=[16,8,128,64] s=[] b=[16,8,128,128] guard=0
attention q=[197,1,2304] k=[197,1,2304] v=[197,1,2304] s=[] guard=0 heads=12 cols=[0,768,1536] hdim=[64,64] seqfirst=1
attention q=[2048,49,32] k=[2048,32,49] v=[2048,49,32] s=[] b=[2048,49,49] guard=0
attention q=[256,49,32] k=[256,32,49] v=[256,49,32] s=[] b=[256,49,49] guard=0
attention q=[256,49,384] k=[256,49,384] v=[256,49,384] s=[] b=[1,4,49,49] guard=0 heads=4 cols=[0,128,256] hdim=[32,32]
attention q=[32,49,32] k=[32,32,49] v=[32,49,32] s=[] b=[32,49,49] guard=0
attention q=[4,49,1152] k=[4,49,1152] v=[4,49,1152] s=[] b=[1,12,49,49] guard=0 heads=12 cols=[0,384,768] hdim=[32,32]
attention q=[4,49,1152] k=[4,49,1152] v=[4,49,1152] s=[] b=[4,12,49,49] guard=0 heads=12 cols=[0,384,768] hdim=[32,32]
attention q=[4,49,768] k=[4,49,768] v=[4,49,768] s=[] b=[1,8,49,49] guard=0 heads=8 cols=[0,256,512] hdim=[32,32]
attention q=[512,49,32] k=[512,32,49] v=[512,49,32] s=[] b=[512,49,49] guard=0
attention q=[64,49,192] k=[64,49,192] v=[64,49,192] s=[] b=[1,2,49,49] guard=0 heads=2 cols=[0,64,128] hdim=[32,32]
attention q=[64,49,288] k=[64,49,288] v=[64,49,288] s=[] b=[1,3,49,49] guard=0 heads=3 cols=[0,96,192] hdim=[32,32]
attention q=[64,49,288] k=[64,49,288] v=[64,49,288] s=[] b=[64,3,49,49] guard=0 heads=3 cols=[0,96,192] hdim=[32,32]
attention q=[64,49,32] k=[64,32,49] v=[64,49,32] s=[] b=[64,49,49] guard=0
attention q=[64,49,768] k=[64,49,768] v=[64,49,768] s=[] b=[1,8,49,49] guard=0 heads=8 cols=[0,256,512] hdim=[32,32]
attention q=[8,128,64] k=[8,128,64] v=[8,128,64] s=[] b=[1,1,128,128] guard=1 heads=1 cols=[0,0,0] hdim=[64,64]
avgpool x=[1,128,28,28] kernel=[3,3] stride=[2,2] pad=[1,1,1,1] count_include_pad=1
avgpool x=[1,256,14,14] kernel=[3,3] stride=[2,2] pad=[1,1,1,1] count_include_pad=1
avgpool x=[1,64,112,112] kernel=[3,3] stride=[2,2] pad=[1,1,1,1] count_include_pad=1
avgpool x=[1,64,56,56] kernel=[3,3] stride=[2,2] pad=[1,1,1,1] count_include_pad=1
avgpool x=[16,128,28,28] kernel=[3,3] stride=[2,2] pad=[1,1,1,1] count_include_pad=1
avgpool x=[16,256,14,14] kernel=[3,3] stride=[2,2] pad=[1,1,1,1] count_include_pad=1
avgpool x=[16,64,112,112] kernel=[3,3] stride=[2,2] pad=[1,1,1,1] count_include_pad=1
avgpool x=[16,64,56,56] kernel=[3,3] stride=[2,2] pad=[1,1,1,1] count_include_pad=1
batchnorm x=[1,128,28,28] scale=[128] bias=[128] mean=[128] var=[128] eps=0.00100000005
batchnorm x=[1,256,14,14] scale=[256] bias=[256] mean=[256] var=[256] eps=0.00100000005
batchnorm x=[1,512,7,7] scale=[512] bias=[512] mean=[512] var=[512] eps=0.00100000005
batchnorm x=[1,64,112,112] scale=[64] bias=[64] mean=[64] var=[64] eps=0.00100000005
batchnorm x=[1,64,56,56] scale=[64] bias=[64] mean=[64] var=[64] eps=0.00100000005
batchnorm x=[16,128,28,28] scale=[128] bias=[128] mean=[128] var=[128] eps=0.00100000005
batchnorm x=[16,256,14,14] scale=[256] bias=[256] mean=[256] var=[256] eps=0.00100000005
batchnorm x=[16,512,7,7] scale=[512] bias=[512] mean=[512] var=[512] eps=0.00100000005
batchnorm x=[16,64,112,112] scale=[64] bias=[64] mean=[64] var=[64] eps=0.00100000005
batchnorm x=[16,64,56,56] scale=[64] bias=[64] mean=[64] var=[64] eps=0.00100000005
concat x0=[1,1,49,512] x1=[1,1,49,512] axis=1
concat x0=[1,1024,7,14] x1=[1,1024,7,14] axis=0
concat x0=[1,1024,7,14] x1=[1,1024,7,14] axis=2
concat x0=[1,128,14,14] x1=[1,1024,14,14] axis=1
concat x0=[1,128,28,28] x1=[1,128,28,28] axis=1
concat x0=[1,128,8,64] x1=[1,128,8,64] axis=1
concat x0=[1,14,4,768] x1=[1,14,4,768] axis=0
concat x0=[1,14,7,384] x1=[1,14,7,384] axis=2
concat x0=[1,16,49,128] x1=[1,16,49,128] axis=1
concat x0=[1,2048,4,7] x1=[1,2048,4,7] axis=0
concat x0=[1,2048,4,7] x1=[1,2048,4,7] axis=2
concat x0=[1,2048,512] x1=[1,2048,512] axis=0
concat x0=[1,2048,768] x1=[1,2048,768] axis=0
concat x0=[1,256,14,14] x1=[1,256,14,14] axis=1
concat x0=[1,256,28,56] x1=[1,256,28,56] axis=0
concat x0=[1,256,28,56] x1=[1,256,28,56] axis=2
concat x0=[1,256,56,56] x1=[15,256,56,56] axis=0
concat x0=[1,256,7,7] x1=[1,2048,7,7] axis=1
concat x0=[1,28,7,384] x1=[1,28,7,384] axis=0
concat x0=[1,4,49,256] x1=[1,4,49,256] axis=1
concat x0=[1,512,1024] x1=[1,512,1024] axis=0
concat x0=[1,512,14,28] x1=[1,512,14,28] axis=0
concat x0=[1,512,14,28] x1=[1,512,14,28] axis=2
concat x0=[1,512,28,28] x1=[15,512,28,28] axis=0
concat x0=[1,512,7,7] x1=[1,512,7,7] axis=1
concat x0=[1,64,112,112] x1=[15,64,112,112] axis=0
concat x0=[1,64,28,28] x1=[1,512,28,28] axis=1
concat x0=[1,64,49,64] x1=[1,64,49,64] axis=1
concat x0=[1,64,56,112] x1=[1,64,56,112] axis=0
concat x0=[1,64,56,112] x1=[1,64,56,112] axis=2
concat x0=[1,64,56,56] x1=[1,256,56,56] axis=1
concat x0=[1,64,56,56] x1=[1,64,56,56] axis=1
concat x0=[1,7,4,768] x1=[1,7,4,768] axis=2
concat x0=[1,768,768] x1=[1,768,768] axis=0
concat x0=[1,8,128,128] x1=[1,8,128,128] axis=1
concat x0=[1,8,128,32] x1=[1,8,128,32] axis=3
concat x0=[1,8,128,64] axis=2
concat x0=[1,8,128,64] x1=[1,8,128,64] axis=1
concat x0=[14,14,2,1] x1=[14,14,2,1] axis=0
concat x0=[14,14,2,1] x1=[14,14,2,1] axis=2
concat x0=[14,28,2,1] x1=[14,28,2,1] axis=2
concat x0=[15,256,56,1] x1=[15,256,56,55] axis=3
concat x0=[15,256,56,55] x1=[15,256,56,1] axis=3
concat x0=[15,256,56,56] x1=[1,256,56,56] axis=0
concat x0=[15,512,28,1] x1=[15,512,28,27] axis=3
concat x0=[15,512,28,27] x1=[15,512,28,1] axis=3
concat x0=[15,512,28,28] x1=[1,512,28,28] axis=0
concat x0=[15,64,112,111] x1=[15,64,112,1] axis=3
concat x0=[15,64,112,112] x1=[1,64,112,112] axis=0
concat x0=[15,64,112,1] x1=[15,64,112,111] axis=3
concat x0=[16,1,49,512] x1=[16,1,49,512] axis=1
concat x0=[16,1024,14,14] x1=[16,128,14,14] axis=1
concat x0=[16,1024,7,14] x1=[16,1024,7,14] axis=0
concat x0=[16,1024,7,14] x1=[16,1024,7,14] axis=2
concat x0=[16,128,14,14] x1=[16,1024,14,14] axis=1
concat x0=[16,128,28,28] x1=[16,128,28,28] axis=1
concat x0=[16,128,8,64] x1=[16,128,8,64] axis=1
concat x0=[16,16,49,128] x1=[16,16,49,128] axis=1
concat x0=[16,2048,4,7] x1=[16,2048,4,7] axis=0
concat x0=[16,2048,4,7] x1=[16,2048,4,7] axis=2
concat x0=[16,256,14,14] x1=[16,256,14,14] axis=1
concat x0=[16,256,28,56] x1=[16,256,28,56] axis=0
concat x0=[16,256,28,56] x1=[16,256,28,56] axis=2
concat x0=[16,256,7,7] x1=[16,2048,7,7] axis=1
concat x0=[16,4,49,256] x1=[16,4,49,256] axis=1
concat x0=[16,512,14,28] x1=[16,512,14,28] axis=0
concat x0=[16,512,14,28] x1=[16,512,14,28] axis=2
concat x0=[16,512,7,7] x1=[16,512,7,7] axis=1
concat x0=[16,64,28,28] x1=[16,512,28,28] axis=1
concat x0=[16,64,49,64] x1=[16,64,49,64] axis=1
concat x0=[16,64,56,112] x1=[16,64,56,112] axis=0
concat x0=[16,64,56,112] x1=[16,64,56,112] axis=2
concat x0=[16,64,56,56] x1=[16,256,56,56] axis=1
concat x0=[16,64,56,56] x1=[16,64,56,56] axis=1
concat x0=[16,8,128,128] x1=[16,8,128,128] axis=1
concat x0=[16,8,128,32] x1=[16,8,128,32] axis=3
concat x0=[16,8,128,64] axis=2
concat x0=[16,8,128,64] x1=[16,8,128,64] axis=1
concat x0=[7,14,2,1] x1=[7,14,2,1] axis=2
concat x0=[7,7,2,1] x1=[7,7,2,1] axis=0
concat x0=[7,7,2,1] x1=[7,7,2,1] axis=2
conv2d x=[1,1024,1,16] w=[64,1024,1,1] b=[64] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,1024,1,1] w=[64,1024,1,1] b=[64] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,1024,1,1] w=[64,1024,1,1] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,1024,1,1] w=[64,1024,3,3] b=[64] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,1024,14,14] w=[1024,1,3,3] b=[1024] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1024 act=gelu
conv2d x=[1,1024,14,14] w=[1024,1,3,3] b=[1024] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1024 act=none
conv2d x=[1,1024,14,14] w=[1024,1,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1024 act=none
conv2d x=[1,1024,14,14] w=[256,1024,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,1024,14,224] w=[1024,1,3,3] b=[1024] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1024 act=gelu
conv2d x=[1,1024,14,224] w=[1024,1,3,3] b=[1024] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1024 act=none
conv2d x=[1,1024,14,224] w=[256,1024,1,1] b=[256] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,1024,28,28] w=[1024,1,3,3] b=[1024] stride=[2,2] pad=[1,1,1,1] dilation=[1,1] groups=1024 act=none
conv2d x=[1,1024,28,28] w=[1024,1,3,3] stride=[2,2] pad=[1,1,1,1] dilation=[1,1] groups=1024 act=none
conv2d x=[1,1024,7,7] w=[512,1024,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,1024,7,7] w=[512,1024,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,1024,7,7] w=[512,1024,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,1152,14,14] w=[256,1152,1,1] b=[256] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,1152,14,14] w=[256,1152,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,1152,14,224] w=[256,1152,1,1] b=[256] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,128,1,16] w=[2048,128,1,1] b=[2048] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,128,1,16] w=[2048,128,1,1] b=[2048] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=sigmoid
conv2d x=[1,128,1,16] w=[2048,128,3,3] b=[2048] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=sigmoid
conv2d x=[1,128,1,1] w=[2048,128,1,1] b=[2048] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,128,1,1] w=[2048,128,1,1] b=[2048] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=sigmoid
conv2d x=[1,128,1,1] w=[2048,128,3,3] b=[2048] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,128,1,1] w=[2048,128,3,3] b=[2048] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=sigmoid
conv2d x=[1,128,14,14] w=[256,128,1,1] b=[256] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,128,14,14] w=[256,128,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,128,14,224] w=[256,128,1,1] b=[256] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,128,28,28] w=[1024,128,1,1] b=[1024] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=gelu
conv2d x=[1,128,28,28] w=[1024,128,1,1] b=[1024] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,128,28,28] w=[1024,128,1,1] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,128,28,28] w=[1024,128,3,3] b=[1024] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=gelu
conv2d x=[1,128,28,28] w=[1024,128,3,3] b=[1024] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,128,28,28] w=[512,128,1,1] b=[512] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=gelu
conv2d x=[1,128,28,28] w=[512,128,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=gelu
conv2d x=[1,128,28,28] w=[512,128,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,128,28,448] w=[1024,128,1,1] b=[1024] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=gelu
conv2d x=[1,128,28,448] w=[1024,128,1,1] b=[1024] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,128,28,448] w=[512,128,1,1] b=[512] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=gelu
conv2d x=[1,128,28,448] w=[512,128,1,1] b=[512] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,128,49,64] w=[64,128,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,128,49,64] w=[64,128,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,128,49,64] w=[64,128,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,128,56,56] w=[64,128,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,128,56,56] w=[64,128,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,128,56,56] w=[64,128,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,14,14,384] w=[14,14,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,14,3,14] w=[14,14,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,14,3,14] w=[14,14,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,14,3,14] w=[14,14,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,14,3,14] w=[28,14,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,14,3,14] w=[28,14,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,14,3,14] w=[28,14,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,16,1,16] w=[256,16,1,1] b=[256] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,16,1,16] w=[256,16,1,1] b=[256] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=sigmoid
conv2d x=[1,16,1,16] w=[256,16,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=sigmoid
conv2d x=[1,16,1,1] w=[256,16,1,1] b=[256] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,16,1,1] w=[256,16,1,1] b=[256] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=sigmoid
conv2d x=[1,16,1,1] w=[256,16,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,16,1,1] w=[256,16,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=sigmoid
conv2d x=[1,16,128,128] w=[8,16,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,16,128,128] w=[8,16,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,16,128,128] w=[8,16,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,16,128,64] w=[8,16,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,16,128,64] w=[8,16,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,16,128,64] w=[8,16,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,2,49,512] w=[1,2,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,2,49,512] w=[1,2,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,2,49,512] w=[1,2,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,2048,1,16] w=[128,2048,1,1] b=[128] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,2048,1,1] w=[128,2048,1,1] b=[128] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,2048,1,1] w=[128,2048,1,1] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,2048,1,1] w=[128,2048,3,3] b=[128] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,2048,14,14] w=[2048,1,3,3] b=[2048] stride=[2,2] pad=[1,1,1,1] dilation=[1,1] groups=2048 act=none
conv2d x=[1,2048,14,14] w=[2048,1,3,3] stride=[2,2] pad=[1,1,1,1] dilation=[1,1] groups=2048 act=none
conv2d x=[1,2048,7,112] w=[2048,1,3,3] b=[2048] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=2048 act=gelu
conv2d x=[1,2048,7,112] w=[2048,1,3,3] b=[2048] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=2048 act=none
conv2d x=[1,2048,7,112] w=[512,2048,1,1] b=[512] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,2048,7,7] w=[2048,1,3,3] b=[2048] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=2048 act=gelu
conv2d x=[1,2048,7,7] w=[2048,1,3,3] b=[2048] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=2048 act=none
conv2d x=[1,2048,7,7] w=[2048,1,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=2048 act=none
conv2d x=[1,2048,7,7] w=[512,2048,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,2304,7,112] w=[512,2304,1,1] b=[512] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,2304,7,7] w=[512,2304,1,1] b=[512] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,2304,7,7] w=[512,2304,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,256,1,16] w=[16,256,1,1] b=[16] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,256,1,1] w=[16,256,1,1] b=[16] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,256,1,1] w=[16,256,1,1] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,256,1,1] w=[16,256,3,3] b=[16] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,256,112,112] w=[256,1,3,3] b=[256] stride=[2,2] pad=[1,1,1,1] dilation=[1,1] groups=256 act=none
conv2d x=[1,256,112,112] w=[256,1,3,3] stride=[2,2] pad=[1,1,1,1] dilation=[1,1] groups=256 act=none
conv2d x=[1,256,14,14] w=[1024,256,1,1] b=[1024] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=gelu
conv2d x=[1,256,14,14] w=[1024,256,3,3] b=[1024] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=gelu
conv2d x=[1,256,14,14] w=[1024,256,3,3] b=[1024] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,256,14,14] w=[2048,256,1,1] b=[2048] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=gelu
conv2d x=[1,256,14,14] w=[2048,256,1,1] b=[2048] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,256,14,14] w=[2048,256,1,1] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,256,14,14] w=[2048,256,3,3] b=[2048] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=gelu
conv2d x=[1,256,14,14] w=[2048,256,3,3] b=[2048] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,256,14,224] w=[1024,256,1,1] b=[1024] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=gelu
conv2d x=[1,256,14,224] w=[1024,256,1,1] b=[1024] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,256,14,224] w=[2048,256,1,1] b=[2048] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=gelu
conv2d x=[1,256,14,224] w=[2048,256,1,1] b=[2048] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,256,28,28] w=[128,256,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,256,28,28] w=[128,256,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,256,28,28] w=[128,256,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,256,56,56] w=[256,1,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=256 act=gelu
conv2d x=[1,256,56,56] w=[256,1,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=256 act=none
conv2d x=[1,256,56,56] w=[256,1,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=256 act=none
conv2d x=[1,256,56,56] w=[64,256,3,3] b=[64] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,256,56,896] w=[256,1,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=256 act=gelu
conv2d x=[1,256,56,896] w=[256,1,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=256 act=none
conv2d x=[1,256,56,896] w=[64,256,1,1] b=[64] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,256,7,7] w=[512,256,1,1] b=[512] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,256,7,7] w=[512,256,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,256,8,64] w=[128,256,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,256,8,64] w=[128,256,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,256,8,64] w=[128,256,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,3,224,224] w=[64,3,3,3] b=[64] stride=[2,2] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,3,224,224] w=[64,3,3,3] stride=[2,2] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,3,224,224] w=[768,3,16,16] b=[768] stride=[16,16] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,3,224,224] w=[96,3,4,4] stride=[4,4] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,32,1,16] w=[512,32,1,1] b=[512] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,32,1,16] w=[512,32,1,1] b=[512] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=sigmoid
conv2d x=[1,32,1,16] w=[512,32,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=sigmoid
conv2d x=[1,32,1,1] w=[512,32,1,1] b=[512] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,32,1,1] w=[512,32,1,1] b=[512] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=sigmoid
conv2d x=[1,32,1,1] w=[512,32,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,32,1,1] w=[512,32,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=sigmoid
conv2d x=[1,32,49,128] w=[16,32,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,32,49,128] w=[16,32,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,32,49,128] w=[16,32,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,320,56,56] w=[64,320,1,1] b=[64] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,320,56,56] w=[64,320,3,3] b=[64] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,320,56,896] w=[64,320,1,1] b=[64] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,512,1,16] w=[32,512,1,1] b=[32] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,512,1,1] w=[32,512,1,1] b=[32] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,512,1,1] w=[32,512,1,1] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,512,1,1] w=[32,512,3,3] b=[32] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,512,14,14] w=[256,512,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,512,14,14] w=[256,512,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,512,14,14] w=[256,512,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,512,28,28] w=[128,512,3,3] b=[128] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,512,28,28] w=[512,1,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=512 act=gelu
conv2d x=[1,512,28,28] w=[512,1,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=512 act=none
conv2d x=[1,512,28,28] w=[512,1,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=512 act=none
conv2d x=[1,512,28,448] w=[128,512,1,1] b=[128] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,512,28,448] w=[512,1,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=512 act=gelu
conv2d x=[1,512,28,448] w=[512,1,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=512 act=none
conv2d x=[1,512,56,56] w=[512,1,3,3] b=[512] stride=[2,2] pad=[1,1,1,1] dilation=[1,1] groups=512 act=none
conv2d x=[1,512,56,56] w=[512,1,3,3] stride=[2,2] pad=[1,1,1,1] dilation=[1,1] groups=512 act=none
conv2d x=[1,512,7,112] w=[2048,512,1,1] b=[2048] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=gelu
conv2d x=[1,512,7,112] w=[2048,512,1,1] b=[2048] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,512,7,7] w=[2048,512,1,1] b=[2048] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=gelu
conv2d x=[1,512,7,7] w=[2048,512,3,3] b=[2048] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=gelu
conv2d x=[1,512,7,7] w=[2048,512,3,3] b=[2048] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,576,28,28] w=[128,576,1,1] b=[128] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,576,28,28] w=[128,576,3,3] b=[128] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,576,28,448] w=[128,576,1,1] b=[128] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,64,1,16] w=[1024,64,1,1] b=[1024] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,64,1,16] w=[1024,64,1,1] b=[1024] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=sigmoid
conv2d x=[1,64,1,16] w=[1024,64,3,3] b=[1024] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=sigmoid
conv2d x=[1,64,1,1] w=[1024,64,1,1] b=[1024] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,64,1,1] w=[1024,64,1,1] b=[1024] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=sigmoid
conv2d x=[1,64,1,1] w=[1024,64,3,3] b=[1024] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,64,1,1] w=[1024,64,3,3] b=[1024] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=sigmoid
conv2d x=[1,64,112,112] w=[256,64,1,1] b=[256] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=gelu
conv2d x=[1,64,112,112] w=[256,64,1,1] b=[256] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,64,112,112] w=[256,64,1,1] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,64,112,112] w=[256,64,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=gelu
conv2d x=[1,64,112,112] w=[256,64,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,64,112,112] w=[64,64,3,3] b=[64] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,64,112,1792] w=[256,64,1,1] b=[256] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=gelu
conv2d x=[1,64,112,1792] w=[256,64,1,1] b=[256] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,64,112,1792] w=[64,64,3,3] b=[64] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,64,28,28] w=[128,64,1,1] b=[128] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,64,28,28] w=[128,64,3,3] b=[128] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,64,28,448] w=[128,64,1,1] b=[128] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,64,56,56] w=[256,64,1,1] b=[256] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=gelu
conv2d x=[1,64,56,56] w=[256,64,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=gelu
conv2d x=[1,64,56,56] w=[256,64,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,64,56,56] w=[256,64,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,64,56,56] w=[512,64,1,1] b=[512] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=gelu
conv2d x=[1,64,56,56] w=[512,64,1,1] b=[512] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,64,56,56] w=[512,64,1,1] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,64,56,56] w=[512,64,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=gelu
conv2d x=[1,64,56,56] w=[512,64,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,64,56,896] w=[256,64,1,1] b=[256] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=gelu
conv2d x=[1,64,56,896] w=[256,64,1,1] b=[256] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,64,56,896] w=[512,64,1,1] b=[512] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=gelu
conv2d x=[1,64,56,896] w=[512,64,1,1] b=[512] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,64,56,896] w=[64,64,1,1] b=[64] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,7,3,7] w=[14,7,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,7,3,7] w=[14,7,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,7,3,7] w=[14,7,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,7,3,7] w=[7,7,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,7,3,7] w=[7,7,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,7,3,7] w=[7,7,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,7,7,768] w=[7,7,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,8,49,256] w=[4,8,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[1,8,49,256] w=[4,8,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[1,8,49,256] w=[4,8,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[14,14,3,1] w=[14,14,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[14,14,3,1] w=[14,14,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[14,14,3,1] w=[14,14,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[14,14,3,1] w=[28,14,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[14,14,3,1] w=[28,14,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[14,14,3,1] w=[28,14,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[14,7,2,1] w=[14,7,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[14,7,2,1] w=[14,7,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[14,7,2,1] w=[7,7,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[14,7,2,1] w=[7,7,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[15,256,56,2] w=[256,1,3,3] b=[256] stride=[1,1] pad=[1,0,1,1] dilation=[1,1] groups=256 act=none
conv2d x=[15,256,56,2] w=[256,1,3,3] b=[256] stride=[1,1] pad=[1,1,1,0] dilation=[1,1] groups=256 act=none
conv2d x=[15,512,28,2] w=[512,1,3,3] b=[512] stride=[1,1] pad=[1,0,1,1] dilation=[1,1] groups=512 act=none
conv2d x=[15,512,28,2] w=[512,1,3,3] b=[512] stride=[1,1] pad=[1,1,1,0] dilation=[1,1] groups=512 act=none
conv2d x=[15,64,112,2] w=[64,64,3,3] b=[64] stride=[1,1] pad=[1,0,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[15,64,112,2] w=[64,64,3,3] b=[64] stride=[1,1] pad=[1,1,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,1024,1,1] w=[64,1024,1,1] b=[64] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,1024,1,1] w=[64,1024,1,1] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,1024,1,1] w=[64,1024,3,3] b=[64] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,1024,14,14] w=[1024,1,3,3] b=[1024] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1024 act=gelu
conv2d x=[16,1024,14,14] w=[1024,1,3,3] b=[1024] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1024 act=none
conv2d x=[16,1024,14,14] w=[1024,1,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1024 act=none
conv2d x=[16,1024,14,14] w=[256,1024,1,1] b=[256] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,1024,14,14] w=[256,1024,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,1024,28,28] w=[1024,1,3,3] b=[1024] stride=[2,2] pad=[1,1,1,1] dilation=[1,1] groups=1024 act=none
conv2d x=[16,1024,28,28] w=[1024,1,3,3] stride=[2,2] pad=[1,1,1,1] dilation=[1,1] groups=1024 act=none
conv2d x=[16,1024,7,7] w=[512,1024,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,1024,7,7] w=[512,1024,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,1024,7,7] w=[512,1024,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,1152,14,14] w=[256,1152,1,1] b=[256] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,1152,14,14] w=[256,1152,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,128,1,1] w=[2048,128,1,1] b=[2048] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,128,1,1] w=[2048,128,1,1] b=[2048] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=sigmoid
conv2d x=[16,128,1,1] w=[2048,128,3,3] b=[2048] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,128,1,1] w=[2048,128,3,3] b=[2048] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=sigmoid
conv2d x=[16,128,14,14] w=[256,128,1,1] b=[256] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,128,14,14] w=[256,128,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,128,28,28] w=[1024,128,1,1] b=[1024] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=gelu
conv2d x=[16,128,28,28] w=[1024,128,1,1] b=[1024] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,128,28,28] w=[1024,128,1,1] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,128,28,28] w=[1024,128,3,3] b=[1024] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=gelu
conv2d x=[16,128,28,28] w=[1024,128,3,3] b=[1024] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,128,28,28] w=[512,128,1,1] b=[512] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=gelu
conv2d x=[16,128,28,28] w=[512,128,1,1] b=[512] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,128,28,28] w=[512,128,1,1] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,128,28,28] w=[512,128,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=gelu
conv2d x=[16,128,28,28] w=[512,128,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,128,49,64] w=[64,128,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,128,49,64] w=[64,128,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,128,49,64] w=[64,128,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,128,56,56] w=[64,128,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,128,56,56] w=[64,128,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,128,56,56] w=[64,128,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,16,1,1] w=[256,16,1,1] b=[256] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,16,1,1] w=[256,16,1,1] b=[256] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=sigmoid
conv2d x=[16,16,1,1] w=[256,16,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,16,1,1] w=[256,16,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=sigmoid
conv2d x=[16,16,128,128] w=[8,16,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,16,128,128] w=[8,16,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,16,128,128] w=[8,16,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,16,128,64] w=[8,16,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,16,128,64] w=[8,16,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,16,128,64] w=[8,16,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,2,49,512] w=[1,2,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,2,49,512] w=[1,2,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,2,49,512] w=[1,2,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,2048,1,1] w=[128,2048,1,1] b=[128] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,2048,1,1] w=[128,2048,1,1] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,2048,1,1] w=[128,2048,3,3] b=[128] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,2048,14,14] w=[2048,1,3,3] b=[2048] stride=[2,2] pad=[1,1,1,1] dilation=[1,1] groups=2048 act=none
conv2d x=[16,2048,14,14] w=[2048,1,3,3] stride=[2,2] pad=[1,1,1,1] dilation=[1,1] groups=2048 act=none
conv2d x=[16,2048,7,7] w=[2048,1,3,3] b=[2048] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=2048 act=gelu
conv2d x=[16,2048,7,7] w=[2048,1,3,3] b=[2048] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=2048 act=none
conv2d x=[16,2048,7,7] w=[2048,1,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=2048 act=none
conv2d x=[16,2048,7,7] w=[512,2048,1,1] b=[512] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,2048,7,7] w=[512,2048,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,2304,7,7] w=[512,2304,1,1] b=[512] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,2304,7,7] w=[512,2304,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,256,1,1] w=[16,256,1,1] b=[16] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,256,1,1] w=[16,256,1,1] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,256,1,1] w=[16,256,3,3] b=[16] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,256,1,1] w=[16,256,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,256,112,112] w=[256,1,3,3] b=[256] stride=[2,2] pad=[1,1,1,1] dilation=[1,1] groups=256 act=none
conv2d x=[16,256,112,112] w=[256,1,3,3] stride=[2,2] pad=[1,1,1,1] dilation=[1,1] groups=256 act=none
conv2d x=[16,256,14,14] w=[1024,256,1,1] b=[1024] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=gelu
conv2d x=[16,256,14,14] w=[1024,256,1,1] b=[1024] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,256,14,14] w=[1024,256,1,1] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,256,14,14] w=[1024,256,3,3] b=[1024] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=gelu
conv2d x=[16,256,14,14] w=[1024,256,3,3] b=[1024] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,256,14,14] w=[2048,256,1,1] b=[2048] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=gelu
conv2d x=[16,256,14,14] w=[2048,256,1,1] b=[2048] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,256,14,14] w=[2048,256,1,1] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,256,14,14] w=[2048,256,3,3] b=[2048] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=gelu
conv2d x=[16,256,14,14] w=[2048,256,3,3] b=[2048] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,256,28,28] w=[128,256,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,256,28,28] w=[128,256,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,256,28,28] w=[128,256,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,256,56,56] w=[256,1,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=256 act=gelu
conv2d x=[16,256,56,56] w=[256,1,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=256 act=none
conv2d x=[16,256,56,56] w=[256,1,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=256 act=none
conv2d x=[16,256,56,56] w=[64,256,1,1] b=[64] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,256,56,56] w=[64,256,3,3] b=[64] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,256,7,7] w=[512,256,1,1] b=[512] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,256,7,7] w=[512,256,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,256,8,64] w=[128,256,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,256,8,64] w=[128,256,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,256,8,64] w=[128,256,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,3,224,224] w=[64,3,3,3] b=[64] stride=[2,2] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,3,224,224] w=[64,3,3,3] stride=[2,2] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,3,224,224] w=[768,3,16,16] b=[768] stride=[16,16] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,32,1,1] w=[512,32,1,1] b=[512] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,32,1,1] w=[512,32,1,1] b=[512] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=sigmoid
conv2d x=[16,32,1,1] w=[512,32,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,32,1,1] w=[512,32,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=sigmoid
conv2d x=[16,32,49,128] w=[16,32,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,32,49,128] w=[16,32,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,32,49,128] w=[16,32,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,320,56,56] w=[64,320,1,1] b=[64] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,320,56,56] w=[64,320,3,3] b=[64] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,512,1,1] w=[32,512,1,1] b=[32] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,512,1,1] w=[32,512,1,1] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,512,1,1] w=[32,512,3,3] b=[32] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,512,1,1] w=[32,512,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,512,14,14] w=[256,512,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,512,14,14] w=[256,512,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,512,14,14] w=[256,512,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,512,28,28] w=[128,512,1,1] b=[128] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,512,28,28] w=[128,512,3,3] b=[128] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,512,28,28] w=[512,1,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=512 act=gelu
conv2d x=[16,512,28,28] w=[512,1,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=512 act=none
conv2d x=[16,512,28,28] w=[512,1,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=512 act=none
conv2d x=[16,512,56,56] w=[512,1,3,3] b=[512] stride=[2,2] pad=[1,1,1,1] dilation=[1,1] groups=512 act=none
conv2d x=[16,512,56,56] w=[512,1,3,3] stride=[2,2] pad=[1,1,1,1] dilation=[1,1] groups=512 act=none
conv2d x=[16,512,7,7] w=[2048,512,1,1] b=[2048] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=gelu
conv2d x=[16,512,7,7] w=[2048,512,1,1] b=[2048] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,512,7,7] w=[2048,512,1,1] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,512,7,7] w=[2048,512,3,3] b=[2048] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=gelu
conv2d x=[16,512,7,7] w=[2048,512,3,3] b=[2048] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,576,28,28] w=[128,576,1,1] b=[128] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,576,28,28] w=[128,576,3,3] b=[128] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,64,1,1] w=[1024,64,1,1] b=[1024] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,64,1,1] w=[1024,64,1,1] b=[1024] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=sigmoid
conv2d x=[16,64,1,1] w=[1024,64,3,3] b=[1024] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,64,1,1] w=[1024,64,3,3] b=[1024] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=sigmoid
conv2d x=[16,64,112,112] w=[256,64,1,1] b=[256] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=gelu
conv2d x=[16,64,112,112] w=[256,64,1,1] b=[256] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,64,112,112] w=[256,64,1,1] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,64,112,112] w=[256,64,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=gelu
conv2d x=[16,64,112,112] w=[256,64,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,64,112,112] w=[64,64,3,3] b=[64] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,64,28,28] w=[128,64,1,1] b=[128] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,64,28,28] w=[128,64,3,3] b=[128] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,64,56,56] w=[256,64,1,1] b=[256] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=gelu
conv2d x=[16,64,56,56] w=[256,64,1,1] b=[256] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,64,56,56] w=[256,64,1,1] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,64,56,56] w=[256,64,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=gelu
conv2d x=[16,64,56,56] w=[256,64,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,64,56,56] w=[512,64,1,1] b=[512] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=gelu
conv2d x=[16,64,56,56] w=[512,64,1,1] b=[512] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,64,56,56] w=[512,64,1,1] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,64,56,56] w=[512,64,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=gelu
conv2d x=[16,64,56,56] w=[512,64,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,64,56,56] w=[64,64,1,1] b=[64] stride=[1,1] pad=[0,0,0,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,64,56,56] w=[64,64,3,3] b=[64] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,8,49,256] w=[4,8,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[16,8,49,256] w=[4,8,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[16,8,49,256] w=[4,8,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[2,1024,7,14] w=[1024,1,3,3] b=[1024] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1024 act=gelu
conv2d x=[2,1024,7,14] w=[1024,1,3,3] b=[1024] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1024 act=none
conv2d x=[2,14,4,768] w=[7,14,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[2,2048,4,7] w=[2048,1,3,3] b=[2048] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=2048 act=gelu
conv2d x=[2,2048,4,7] w=[2048,1,3,3] b=[2048] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=2048 act=none
conv2d x=[2,256,28,56] w=[256,1,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=256 act=gelu
conv2d x=[2,256,28,56] w=[256,1,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=256 act=none
conv2d x=[2,28,7,384] w=[14,28,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[2,512,14,28] w=[512,1,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=512 act=gelu
conv2d x=[2,512,14,28] w=[512,1,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=512 act=none
conv2d x=[2,64,56,112] w=[64,64,3,3] b=[64] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[28,14,2,1] w=[14,14,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[28,14,2,1] w=[14,14,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[28,14,2,1] w=[28,14,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[28,14,2,1] w=[28,14,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[32,1024,7,14] w=[1024,1,3,3] b=[1024] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1024 act=gelu
conv2d x=[32,1024,7,14] w=[1024,1,3,3] b=[1024] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1024 act=none
conv2d x=[32,2048,4,7] w=[2048,1,3,3] b=[2048] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=2048 act=gelu
conv2d x=[32,2048,4,7] w=[2048,1,3,3] b=[2048] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=2048 act=none
conv2d x=[32,256,28,56] w=[256,1,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=256 act=gelu
conv2d x=[32,256,28,56] w=[256,1,3,3] b=[256] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=256 act=none
conv2d x=[32,512,14,28] w=[512,1,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=512 act=gelu
conv2d x=[32,512,14,28] w=[512,1,3,3] b=[512] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=512 act=none
conv2d x=[32,64,56,112] w=[64,64,3,3] b=[64] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[7,7,3,1] w=[14,7,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[7,7,3,1] w=[14,7,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[7,7,3,1] w=[14,7,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
conv2d x=[7,7,3,1] w=[7,7,1,3] stride=[1,1] pad=[0,1,0,1] dilation=[1,1] groups=1 act=none
conv2d x=[7,7,3,1] w=[7,7,3,1] stride=[1,1] pad=[1,0,1,0] dilation=[1,1] groups=1 act=none
conv2d x=[7,7,3,1] w=[7,7,3,3] stride=[1,1] pad=[1,1,1,1] dilation=[1,1] groups=1 act=none
equal a=[1,12,128,128] b=[1,12,128,128]
equal a=[1,8,128,128] b=[1,8,128,128]
equal a=[16,12,128,128] b=[16,12,128,128]
equal a=[16,8,128,128] b=[16,8,128,128]
erf x=[1,1,49,2048]
erf x=[1,1024,14,14]
erf x=[1,1024,28,28]
erf x=[1,16,49,512]
erf x=[1,2048,14,14]
erf x=[1,2048,7,7]
erf x=[1,256,112,112]
erf x=[1,256,56,56]
erf x=[1,4,49,1024]
erf x=[1,512,28,28]
erf x=[1,512,56,56]
erf x=[1,64,112,112]
erf x=[1,64,49,256]
erf x=[16,1,49,2048]
erf x=[16,1024,14,14]
erf x=[16,1024,28,28]
erf x=[16,16,49,512]
erf x=[16,2048,14,14]
erf x=[16,2048,7,7]
erf x=[16,256,112,112]
erf x=[16,256,56,56]
erf x=[16,4,49,1024]
erf x=[16,512,28,28]
erf x=[16,512,56,56]
erf x=[16,64,112,112]
erf x=[16,64,49,256]
ewadd a=[1,1,16,49,49] b=[1,16,49,49]
ewadd a=[1,1,49,1536] b=[1536]
ewadd a=[1,1,49,2048] b=[2048]
ewadd a=[1,1,49,2048] b=[]
ewadd a=[1,1,49,512] b=[1,1,49,512]
ewadd a=[1,1,49,512] b=[512]
ewadd a=[1,1000] b=[1000]
ewadd a=[1,1024,14,14] b=[]
ewadd a=[1,1024,28,28] b=[]
ewadd a=[1,128,1536] b=[1536]
ewadd a=[1,128,1] b=[]
ewadd a=[1,128,2304] b=[2304]
ewadd a=[1,128,28,28] b=[1,128,28,28]
ewadd a=[1,128,3072] b=[3072]
ewadd a=[1,128,512] b=[512]
ewadd a=[1,128,768] b=[768]
ewadd a=[1,128,8,64] b=[1,128,8,64]
ewadd a=[1,14,14,1536] b=[1536]
ewadd a=[1,14,14,384] b=[384]
ewadd a=[1,16,4,49,49] b=[1,4,49,49]
ewadd a=[1,16,49,128] b=[1,16,49,128]
ewadd a=[1,16,49,128] b=[128]
ewadd a=[1,16,49,384] b=[384]
ewadd a=[1,16,49,512] b=[512]
ewadd a=[1,16,49,512] b=[]
ewadd a=[1,197,2304] b=[2304]
ewadd a=[1,2048,14,14] b=[]
ewadd a=[1,2048,7,7] b=[]
ewadd a=[1,256,112,112] b=[]
ewadd a=[1,256,14,14] b=[1,256,14,14]
ewadd a=[1,256,56,56] b=[]
ewadd a=[1,28,28,192] b=[192]
ewadd a=[1,28,28,768] b=[768]
ewadd a=[1,4,49,1024] b=[1024]
ewadd a=[1,4,49,1024] b=[]
ewadd a=[1,4,49,256] b=[1,4,49,256]
ewadd a=[1,4,49,256] b=[256]
ewadd a=[1,4,49,768] b=[768]
ewadd a=[1,4,8,49,49] b=[1,8,49,49]
ewadd a=[1,49,2304] b=[2304]
ewadd a=[1,49,768] b=[768]
ewadd a=[1,512,28,28] b=[]
ewadd a=[1,512,56,56] b=[]
ewadd a=[1,512,7,7] b=[1,512,7,7]
ewadd a=[1,512] b=[512]
ewadd a=[1,56,56,384] b=[384]
ewadd a=[1,56,56,96] b=[96]
ewadd a=[1,64,112,112] b=[]
ewadd a=[1,64,2,49,49] b=[1,2,49,49]
ewadd a=[1,64,49,192] b=[192]
ewadd a=[1,64,49,256] b=[256]
ewadd a=[1,64,49,256] b=[]
ewadd a=[1,64,49,64] b=[1,64,49,64]
ewadd a=[1,64,49,64] b=[64]
ewadd a=[1,64,56,56] b=[1,64,56,56]
ewadd a=[1,7,7,3072] b=[3072]
ewadd a=[1,7,7,768] b=[768]
ewadd a=[1,8,128,128] b=[1,1,128,128]
ewadd a=[1,8,128,128] b=[1,8,128,128]
ewadd a=[1,8,128,64] b=[1,8,128,64]
ewadd a=[1000] b=[1,1000]
ewadd a=[1000] b=[16,1000]
ewadd a=[1024,49,288] b=[288]
ewadd a=[1024,49,96] b=[96]
ewadd a=[1024] b=[1,4,49,1024]
ewadd a=[1024] b=[16,4,49,1024]
ewadd a=[128] b=[1,16,49,128]
ewadd a=[128] b=[16,16,49,128]
ewadd a=[1536] b=[1,1,49,1536]
ewadd a=[1536] b=[1,128,1536]
ewadd a=[1536] b=[16,1,49,1536]
ewadd a=[1536] b=[16,128,1536]
ewadd a=[16,1,16,49,49] b=[1,16,49,49]
ewadd a=[16,1,49,1536] b=[1536]
ewadd a=[16,1,49,2048] b=[2048]
ewadd a=[16,1,49,2048] b=[]
ewadd a=[16,1,49,512] b=[16,1,49,512]
ewadd a=[16,1,49,512] b=[512]
ewadd a=[16,1000] b=[1000]
ewadd a=[16,1024,14,14] b=[]
ewadd a=[16,1024,28,28] b=[]
ewadd a=[16,128,1536] b=[1536]
ewadd a=[16,128,1] b=[]
ewadd a=[16,128,2304] b=[2304]
ewadd a=[16,128,28,28] b=[16,128,28,28]
ewadd a=[16,128,3072] b=[3072]
ewadd a=[16,128,512] b=[512]
ewadd a=[16,128,768] b=[768]
ewadd a=[16,128,8,64] b=[16,128,8,64]
ewadd a=[16,14,14,1536] b=[1536]
ewadd a=[16,14,14,384] b=[384]
ewadd a=[16,16,4,49,49] b=[1,4,49,49]
ewadd a=[16,16,49,128] b=[128]
ewadd a=[16,16,49,128] b=[16,16,49,128]
ewadd a=[16,16,49,384] b=[384]
ewadd a=[16,16,49,512] b=[512]
ewadd a=[16,16,49,512] b=[]
ewadd a=[16,197,2304] b=[2304]
ewadd a=[16,2048,14,14] b=[]
ewadd a=[16,2048,7,7] b=[]
ewadd a=[16,256,112,112] b=[]
ewadd a=[16,256,14,14] b=[16,256,14,14]
ewadd a=[16,256,56,56] b=[]
ewadd a=[16,28,28,192] b=[192]
ewadd a=[16,28,28,768] b=[768]
ewadd a=[16,4,49,1024] b=[1024]
ewadd a=[16,4,49,1024] b=[]
ewadd a=[16,4,49,256] b=[16,4,49,256]
ewadd a=[16,4,49,256] b=[256]
ewadd a=[16,4,49,768] b=[768]
ewadd a=[16,4,8,49,49] b=[1,8,49,49]
ewadd a=[16,49,192] b=[192]
ewadd a=[16,49,2304] b=[2304]
ewadd a=[16,49,576] b=[576]
ewadd a=[16,49,768] b=[768]
ewadd a=[16,512,28,28] b=[]
ewadd a=[16,512,56,56] b=[]
ewadd a=[16,512,7,7] b=[16,512,7,7]
ewadd a=[16,512] b=[512]
ewadd a=[16,56,56,384] b=[384]
ewadd a=[16,56,56,96] b=[96]
ewadd a=[16,64,112,112] b=[]
ewadd a=[16,64,2,49,49] b=[1,2,49,49]
ewadd a=[16,64,49,192] b=[192]
ewadd a=[16,64,49,256] b=[256]
ewadd a=[16,64,49,256] b=[]
ewadd a=[16,64,49,64] b=[16,64,49,64]
ewadd a=[16,64,49,64] b=[64]
ewadd a=[16,64,56,56] b=[16,64,56,56]
ewadd a=[16,7,7,3072] b=[3072]
ewadd a=[16,7,7,768] b=[768]
ewadd a=[16,8,128,128] b=[16,1,128,128]
ewadd a=[16,8,128,128] b=[16,8,128,128]
ewadd a=[16,8,128,64] b=[16,8,128,64]
ewadd a=[192] b=[1,64,49,192]
ewadd a=[192] b=[16,64,49,192]
ewadd a=[197,768] b=[768]
ewadd a=[2,2048,768] b=[2,1,768]
ewadd a=[2048] b=[1,1,49,2048]
ewadd a=[2048] b=[16,1,49,2048]
ewadd a=[2304] b=[1,128,2304]
ewadd a=[2304] b=[1,197,2304]
ewadd a=[2304] b=[16,128,2304]
ewadd a=[2304] b=[16,197,2304]
ewadd a=[2304] b=[197,1,2304]
ewadd a=[2304] b=[197,16,2304]
ewadd a=[256,49,192] b=[192]
ewadd a=[256,49,576] b=[576]
ewadd a=[256] b=[1,4,49,256]
ewadd a=[256] b=[1,64,49,256]
ewadd a=[256] b=[16,4,49,256]
ewadd a=[256] b=[16,64,49,256]
ewadd a=[3072] b=[1,197,3072]
ewadd a=[3072] b=[16,197,3072]
ewadd a=[3152,768] b=[768]
ewadd a=[384] b=[1,16,49,384]
ewadd a=[384] b=[16,16,49,384]
ewadd a=[4,49,1152] b=[1152]
ewadd a=[4,49,384] b=[384]
ewadd a=[512] b=[1,1,49,512]
ewadd a=[512] b=[1,128,512]
ewadd a=[512] b=[1,16,49,512]
ewadd a=[512] b=[1,512]
ewadd a=[512] b=[16,1,49,512]
ewadd a=[512] b=[16,128,512]
ewadd a=[512] b=[16,16,49,512]
ewadd a=[512] b=[16,512]
ewadd a=[64,49,1152] b=[1152]
ewadd a=[64,49,288] b=[288]
ewadd a=[64,49,384] b=[384]
ewadd a=[64,49,96] b=[96]
ewadd a=[64] b=[1,64,49,64]
ewadd a=[64] b=[16,64,49,64]
ewadd a=[768] b=[1,197,768]
ewadd a=[768] b=[1,4,49,768]
ewadd a=[768] b=[16,197,768]
ewadd a=[768] b=[16,4,49,768]
ewadd a=[768] b=[197,768]
ewadd a=[768] b=[3152,768]
ewdiv a=[1,1,49,2048] b=[]
ewdiv a=[1,1024,14,14] b=[]
ewdiv a=[1,1024,28,28] b=[]
ewdiv a=[1,16,49,512] b=[]
ewdiv a=[1,2048,14,14] b=[]
ewdiv a=[1,2048,7,7] b=[]
ewdiv a=[1,256,112,112] b=[]
ewdiv a=[1,256,56,56] b=[]
ewdiv a=[1,4,49,1024] b=[]
ewdiv a=[1,512,28,28] b=[]
ewdiv a=[1,512,56,56] b=[]
ewdiv a=[1,64,112,112] b=[]
ewdiv a=[1,64,49,256] b=[]
ewdiv a=[16,1,49,2048] b=[]
ewdiv a=[16,1024,14,14] b=[]
ewdiv a=[16,1024,28,28] b=[]
ewdiv a=[16,16,49,512] b=[]
ewdiv a=[16,2048,14,14] b=[]
ewdiv a=[16,2048,7,7] b=[]
ewdiv a=[16,256,112,112] b=[]
ewdiv a=[16,256,56,56] b=[]
ewdiv a=[16,4,49,1024] b=[]
ewdiv a=[16,512,28,28] b=[]
ewdiv a=[16,512,56,56] b=[]
ewdiv a=[16,64,112,112] b=[]
ewdiv a=[16,64,49,256] b=[]
ewdiv a=[] b=[1,128,1]
ewdiv a=[] b=[16,128,1]
ewmul a=[1,1,16,49,32] b=[]
ewmul a=[1,1,49,2048] b=[1,1,49,2048]
ewmul a=[1,1,49,2048] b=[]
ewmul a=[1,1024,1,1] b=[1,1024,14,14]
ewmul a=[1,1024,14,14] b=[1,1024,14,14]
ewmul a=[1,1024,14,14] b=[]
ewmul a=[1,1024,28,28] b=[1,1024,28,28]
ewmul a=[1,1024,28,28] b=[]
ewmul a=[1,12,128,64] b=[]
ewmul a=[1,12,64,128] b=[]
ewmul a=[1,128,1,1] b=[1,128,1,1]
ewmul a=[1,128,512] b=[1,128,1]
ewmul a=[1,128,8,64] b=[1,128,1,64]
ewmul a=[1,16,1,1] b=[1,16,1,1]
ewmul a=[1,16,4,49,32] b=[]
ewmul a=[1,16,49,512] b=[1,16,49,512]
ewmul a=[1,16,49,512] b=[]
ewmul a=[1,197,3072] b=[]
ewmul a=[1,2048,1,1] b=[1,2048,7,7]
ewmul a=[1,2048,14,14] b=[1,2048,14,14]
ewmul a=[1,2048,14,14] b=[]
ewmul a=[1,2048,7,7] b=[1,2048,7,7]
ewmul a=[1,2048,7,7] b=[]
ewmul a=[1,24,49,49] b=[]
ewmul a=[1,256,1,1] b=[1,256,56,56]
ewmul a=[1,256,112,112] b=[1,256,112,112]
ewmul a=[1,256,112,112] b=[]
ewmul a=[1,256,56,56] b=[1,256,56,56]
ewmul a=[1,256,56,56] b=[]
ewmul a=[1,32,1,1] b=[1,32,1,1]
ewmul a=[1,4,49,1024] b=[1,4,49,1024]
ewmul a=[1,4,49,1024] b=[]
ewmul a=[1,4,8,49,32] b=[]
ewmul a=[1,512,1,1] b=[1,512,28,28]
ewmul a=[1,512,28,28] b=[1,512,28,28]
ewmul a=[1,512,28,28] b=[]
ewmul a=[1,512,56,56] b=[1,512,56,56]
ewmul a=[1,512,56,56] b=[]
ewmul a=[1,64,1,1] b=[1,64,1,1]
ewmul a=[1,64,112,112] b=[1,64,112,112]
ewmul a=[1,64,112,112] b=[]
ewmul a=[1,64,2,49,32] b=[]
ewmul a=[1,64,49,256] b=[1,64,49,256]
ewmul a=[1,64,49,256] b=[]
ewmul a=[1,8,128,128] b=[]
ewmul a=[1,8,128,64] b=[1,1,128,64]
ewmul a=[1,8,128,64] b=[]
ewmul a=[1,8,64,128] b=[]
ewmul a=[1024,3,49,49] b=[]
ewmul a=[16,1,128,128] b=[16,1,128,128]
ewmul a=[16,1,16,49,32] b=[]
ewmul a=[16,1,49,2048] b=[16,1,49,2048]
ewmul a=[16,1,49,2048] b=[]
ewmul a=[16,1024,1,1] b=[16,1024,14,14]
ewmul a=[16,1024,14,14] b=[16,1024,14,14]
ewmul a=[16,1024,14,14] b=[]
ewmul a=[16,1024,28,28] b=[16,1024,28,28]
ewmul a=[16,1024,28,28] b=[]
ewmul a=[16,12,128,64] b=[]
ewmul a=[16,12,64,128] b=[]
ewmul a=[16,128,1,1] b=[16,128,1,1]
ewmul a=[16,128,512] b=[16,128,1]
ewmul a=[16,128,8,64] b=[1,128,1,64]
ewmul a=[16,16,1,1] b=[16,16,1,1]
ewmul a=[16,16,4,49,32] b=[]
ewmul a=[16,16,49,512] b=[16,16,49,512]
ewmul a=[16,16,49,512] b=[]
ewmul a=[16,197,3072] b=[]
ewmul a=[16,2048,1,1] b=[16,2048,7,7]
ewmul a=[16,2048,14,14] b=[16,2048,14,14]
ewmul a=[16,2048,14,14] b=[]
ewmul a=[16,2048,7,7] b=[16,2048,7,7]
ewmul a=[16,2048,7,7] b=[]
ewmul a=[16,24,49,49] b=[]
ewmul a=[16,256,1,1] b=[16,256,56,56]
ewmul a=[16,256,112,112] b=[16,256,112,112]
ewmul a=[16,256,112,112] b=[]
ewmul a=[16,256,56,56] b=[16,256,56,56]
ewmul a=[16,256,56,56] b=[]
ewmul a=[16,32,1,1] b=[16,32,1,1]
ewmul a=[16,4,49,1024] b=[16,4,49,1024]
ewmul a=[16,4,49,1024] b=[]
ewmul a=[16,4,8,49,32] b=[]
ewmul a=[16,512,1,1] b=[16,512,28,28]
ewmul a=[16,512,28,28] b=[16,512,28,28]
ewmul a=[16,512,28,28] b=[]
ewmul a=[16,512,56,56] b=[16,512,56,56]
ewmul a=[16,512,56,56] b=[]
ewmul a=[16,6,49,49] b=[]
ewmul a=[16,64,1,1] b=[16,64,1,1]
ewmul a=[16,64,112,112] b=[16,64,112,112]
ewmul a=[16,64,112,112] b=[]
ewmul a=[16,64,2,49,32] b=[]
ewmul a=[16,64,49,256] b=[16,64,49,256]
ewmul a=[16,64,49,256] b=[]
ewmul a=[16,8,128,128] b=[]
ewmul a=[16,8,128,64] b=[1,1,128,64]
ewmul a=[16,8,128,64] b=[]
ewmul a=[16,8,64,128] b=[]
ewmul a=[256,6,49,49] b=[]
ewmul a=[4,12,49,49] b=[]
ewmul a=[512] b=[1,128,512]
ewmul a=[512] b=[16,128,512]
ewmul a=[64,12,49,49] b=[]
ewmul a=[64,3,49,49] b=[]
gather data=[32000,512] indices=[1,128] axis=0
gather data=[32000,512] indices=[16,128] axis=0
gather data=[32128,512] indices=[1,128] axis=0
gather data=[32128,512] indices=[16,128] axis=0
gelu x=[1,1,49,2048]
gelu x=[1,1024,14,14]
gelu x=[1,1024,28,28]
gelu x=[1,14,14,1536]
gelu x=[1,16,49,512]
gelu x=[1,197,3072]
gelu x=[1,2048,14,14]
gelu x=[1,2048,7,7]
gelu x=[1,256,112,112]
gelu x=[1,256,56,56]
gelu x=[1,28,28,768]
gelu x=[1,4,49,1024]
gelu x=[1,512,28,28]
gelu x=[1,512,56,56]
gelu x=[1,56,56,384]
gelu x=[1,64,112,112]
gelu x=[1,64,49,256]
gelu x=[1,7,7,3072]
gelu x=[16,1,49,2048]
gelu x=[16,1024,14,14]
gelu x=[16,1024,28,28]
gelu x=[16,14,14,1536]
gelu x=[16,16,49,512]
gelu x=[16,197,3072]
gelu x=[16,2048,14,14]
gelu x=[16,2048,7,7]
gelu x=[16,256,112,112]
gelu x=[16,256,56,56]
gelu x=[16,28,28,768]
gelu x=[16,4,49,1024]
gelu x=[16,512,28,28]
gelu x=[16,512,56,56]
gelu x=[16,56,56,384]
gelu x=[16,64,112,112]
gelu x=[16,64,49,256]
gelu x=[16,7,7,3072]
global_avgpool x=[1,1024,14,14]
global_avgpool x=[1,256,56,56]
global_avgpool x=[1,512,28,28]
global_avgpool x=[1,512,7,7]
global_avgpool x=[16,1024,14,14]
global_avgpool x=[16,2048,7,7]
global_avgpool x=[16,256,56,56]
global_avgpool x=[16,512,28,28]
global_avgpool x=[16,512,7,7]
layernorm x=[1,1,49,512] gamma=[512] beta=[512] axis=3 eps=9.99999975e-06
layernorm x=[1,128,512] gamma=[512] axis=2 eps=9.99999997e-07 rms=1
layernorm x=[1,16,49,128] gamma=[128] beta=[128] axis=3 eps=9.99999975e-06
layernorm x=[1,4,49,256] gamma=[256] beta=[256] axis=3 eps=9.99999975e-06
layernorm x=[1,512] gamma=[512] beta=[512] axis=1 eps=9.99999975e-06
layernorm x=[1,56,56,96] gamma=[96] beta=[96] xb=[96] axis=3 eps=9.99999975e-06
layernorm x=[1,64,49,64] gamma=[64] beta=[64] axis=3 eps=9.99999975e-06
layernorm x=[16,1,49,512] gamma=[512] beta=[512] axis=3 eps=9.99999975e-06
layernorm x=[16,128,512] gamma=[512] axis=2 eps=9.99999997e-07 rms=1
layernorm x=[16,16,49,128] gamma=[128] beta=[128] axis=3 eps=9.99999975e-06
layernorm x=[16,4,49,256] gamma=[256] beta=[256] axis=3 eps=9.99999975e-06
layernorm x=[16,512] gamma=[512] beta=[512] axis=1 eps=9.99999975e-06
layernorm x=[16,64,49,64] gamma=[64] beta=[64] axis=3 eps=9.99999975e-06
matmul a=[1,1,49,2048] b=[2048,512] act=none
matmul a=[1,1,49,2048] b=[2048,512] bias=[512] act=none
matmul a=[1,1,49,512] b=[512,1536] act=none
matmul a=[1,1,49,512] b=[512,1536] bias=[1536] act=none
matmul a=[1,1,49,512] b=[512,2048] act=none
matmul a=[1,1,49,512] b=[512,2048] bias=[2048] act=gelu
matmul a=[1,1,49,512] b=[512,2048] bias=[2048] act=none
matmul a=[1,1,49,512] b=[512,512] act=none
matmul a=[1,1,49,512] b=[512,512] bias=[512] act=none
matmul a=[1,128,1376] b=[1376,512] act=none
matmul a=[1,128,1376] b=[1376,512] bias=[512] act=none
matmul a=[1,128,2048] b=[2048,512] act=none
matmul a=[1,128,2048] b=[2048,512] bias=[512] act=none
matmul a=[1,128,512] b=[512,1024] act=none
matmul a=[1,128,512] b=[512,1536] act=none
matmul a=[1,128,512] b=[512,2048] act=none
matmul a=[1,128,512] b=[512,2048] act=relu
matmul a=[1,128,512] b=[512,2560] act=none
matmul a=[1,128,512] b=[512,2752] act=none
matmul a=[1,128,512] b=[512,512] bias=[512] act=none
matmul a=[1,128,768] b=[768,1536] act=none
matmul a=[1,14,14,1536] b=[1536,384] bias=[384] act=none
matmul a=[1,14,14,384] b=[384,1536] bias=[1536] act=gelu
matmul a=[1,14,14,384] b=[384,1536] bias=[1536] act=none
matmul a=[1,16,49,128] b=[128,128] act=none
matmul a=[1,16,49,128] b=[128,128] bias=[128] act=none
matmul a=[1,16,49,128] b=[128,384] act=none
matmul a=[1,16,49,128] b=[128,384] bias=[384] act=none
matmul a=[1,16,49,128] b=[128,512] act=none
matmul a=[1,16,49,128] b=[128,512] bias=[512] act=gelu
matmul a=[1,16,49,128] b=[128,512] bias=[512] act=none
matmul a=[1,16,49,512] b=[512,128] act=none
matmul a=[1,16,49,512] b=[512,128] bias=[128] act=none
matmul a=[1,196,768] b=[768,768] bias=[768] act=none
matmul a=[1,197,3072] b=[3072,768] bias=[768] act=none
matmul a=[1,197,768] b=[768,2304] act=none
matmul a=[1,197,768] b=[768,2304] bias=[2304] act=none
matmul a=[1,197,768] b=[768,3072] bias=[3072] act=gelu
matmul a=[1,197,768] b=[768,3072] bias=[3072] act=none
matmul a=[1,28,28,192] b=[192,768] bias=[768] act=gelu
matmul a=[1,28,28,192] b=[192,768] bias=[768] act=none
matmul a=[1,28,28,768] b=[768,192] bias=[192] act=none
matmul a=[1,4,49,1024] b=[1024,256] act=none
matmul a=[1,4,49,1024] b=[1024,256] bias=[256] act=none
matmul a=[1,4,49,256] b=[256,1024] act=none
matmul a=[1,4,49,256] b=[256,1024] bias=[1024] act=gelu
matmul a=[1,4,49,256] b=[256,1024] bias=[1024] act=none
matmul a=[1,4,49,256] b=[256,256] act=none
matmul a=[1,4,49,256] b=[256,256] bias=[256] act=none
matmul a=[1,4,49,256] b=[256,768] act=none
matmul a=[1,4,49,256] b=[256,768] bias=[768] act=none
matmul a=[1,49,768] b=[768,2304] bias=[2304] act=none
matmul a=[1,49,768] b=[768,768] bias=[768] act=none
matmul a=[1,512] b=[512,1000] act=none
matmul a=[1,512] b=[512,512] act=none
matmul a=[1,512] b=[512,512] bias=[512] act=none
matmul a=[1,512] b=[512,512] bias=[512] act=tanh
matmul a=[1,56,56,384] b=[384,96] bias=[96] act=none
matmul a=[1,56,56,96] b=[96,384] bias=[384] act=gelu
matmul a=[1,56,56,96] b=[96,384] bias=[384] act=none
matmul a=[1,64,49,256] b=[256,64] act=none
matmul a=[1,64,49,256] b=[256,64] bias=[64] act=none
matmul a=[1,64,49,64] b=[64,192] act=none
matmul a=[1,64,49,64] b=[64,192] bias=[192] act=none
matmul a=[1,64,49,64] b=[64,256] act=none
matmul a=[1,64,49,64] b=[64,256] bias=[256] act=gelu
matmul a=[1,64,49,64] b=[64,256] bias=[256] act=none
matmul a=[1,64,49,64] b=[64,64] act=none
matmul a=[1,64,49,64] b=[64,64] bias=[64] act=none
matmul a=[1,7,7,3072] b=[3072,768] bias=[768] act=none
matmul a=[1,7,7,768] b=[768,3072] bias=[3072] act=gelu
matmul a=[1,7,7,768] b=[768,3072] bias=[3072] act=none
matmul a=[1,8,128,128] b=[1,8,128,64] act=none
matmul a=[1,8,128,64] b=[1,8,64,128] act=none
matmul a=[1,8,128,64] b=[1,8,64,128] bias=[128] act=none
matmul a=[1024,49,32] b=[1024,32,49] act=none
matmul a=[1024,49,49] b=[1024,49,32] act=none
matmul a=[128,49,32] b=[128,32,49] act=none
matmul a=[128,49,49] b=[128,49,32] act=none
matmul a=[16,1,49,2048] b=[2048,512] act=none
matmul a=[16,1,49,2048] b=[2048,512] bias=[512] act=none
matmul a=[16,1,49,512] b=[512,1536] act=none
matmul a=[16,1,49,512] b=[512,1536] bias=[1536] act=none
matmul a=[16,1,49,512] b=[512,2048] act=none
matmul a=[16,1,49,512] b=[512,2048] bias=[2048] act=gelu
matmul a=[16,1,49,512] b=[512,2048] bias=[2048] act=none
matmul a=[16,1,49,512] b=[512,512] act=none
matmul a=[16,1,49,512] b=[512,512] bias=[512] act=none
matmul a=[16,128,1376] b=[1376,512] act=none
matmul a=[16,128,1376] b=[1376,512] bias=[512] act=none
matmul a=[16,128,2048] b=[2048,512] act=none
matmul a=[16,128,2048] b=[2048,512] bias=[512] act=none
matmul a=[16,128,512] b=[512,1024] act=none
matmul a=[16,128,512] b=[512,1536] act=none
matmul a=[16,128,512] b=[512,2048] act=none
matmul a=[16,128,512] b=[512,2048] act=relu
matmul a=[16,128,512] b=[512,2560] act=none
matmul a=[16,128,512] b=[512,2752] act=none
matmul a=[16,128,512] b=[512,512] bias=[512] act=none
matmul a=[16,128,768] b=[768,1536] act=none
matmul a=[16,14,14,1536] b=[1536,384] bias=[384] act=none
matmul a=[16,14,14,384] b=[384,1536] bias=[1536] act=gelu
matmul a=[16,14,14,384] b=[384,1536] bias=[1536] act=none
matmul a=[16,16,49,128] b=[128,128] act=none
matmul a=[16,16,49,128] b=[128,128] bias=[128] act=none
matmul a=[16,16,49,128] b=[128,384] act=none
matmul a=[16,16,49,128] b=[128,384] bias=[384] act=none
matmul a=[16,16,49,128] b=[128,512] act=none
matmul a=[16,16,49,128] b=[128,512] bias=[512] act=gelu
matmul a=[16,16,49,128] b=[128,512] bias=[512] act=none
matmul a=[16,16,49,512] b=[512,128] act=none
matmul a=[16,16,49,512] b=[512,128] bias=[128] act=none
matmul a=[16,196,768] b=[768,768] bias=[768] act=none
matmul a=[16,197,3072] b=[3072,768] bias=[768] act=none
matmul a=[16,197,768] b=[768,2304] act=none
matmul a=[16,197,768] b=[768,2304] bias=[2304] act=none
matmul a=[16,197,768] b=[768,3072] bias=[3072] act=gelu
matmul a=[16,197,768] b=[768,3072] bias=[3072] act=none
matmul a=[16,28,28,192] b=[192,768] bias=[768] act=gelu
matmul a=[16,28,28,192] b=[192,768] bias=[768] act=none
matmul a=[16,4,49,1024] b=[1024,256] act=none
matmul a=[16,4,49,1024] b=[1024,256] bias=[256] act=none
matmul a=[16,4,49,256] b=[256,1024] act=none
matmul a=[16,4,49,256] b=[256,1024] bias=[1024] act=gelu
matmul a=[16,4,49,256] b=[256,1024] bias=[1024] act=none
matmul a=[16,4,49,256] b=[256,256] act=none
matmul a=[16,4,49,256] b=[256,256] bias=[256] act=none
matmul a=[16,4,49,256] b=[256,768] act=none
matmul a=[16,4,49,256] b=[256,768] bias=[768] act=none
matmul a=[16,49,192] b=[192,192] bias=[192] act=none
matmul a=[16,49,192] b=[192,576] bias=[576] act=none
matmul a=[16,49,32] b=[16,32,49] act=none
matmul a=[16,49,49] b=[16,49,32] act=none
matmul a=[16,512] b=[512,1000] act=none
matmul a=[16,512] b=[512,512] act=none
matmul a=[16,512] b=[512,512] bias=[512] act=none
matmul a=[16,512] b=[512,512] bias=[512] act=tanh
matmul a=[16,56,56,96] b=[96,384] bias=[384] act=gelu
matmul a=[16,56,56,96] b=[96,384] bias=[384] act=none
matmul a=[16,64,49,256] b=[256,64] act=none
matmul a=[16,64,49,256] b=[256,64] bias=[64] act=none
matmul a=[16,64,49,64] b=[64,192] act=none
matmul a=[16,64,49,64] b=[64,192] bias=[192] act=none
matmul a=[16,64,49,64] b=[64,256] act=none
matmul a=[16,64,49,64] b=[64,256] bias=[256] act=gelu
matmul a=[16,64,49,64] b=[64,256] bias=[256] act=none
matmul a=[16,64,49,64] b=[64,64] act=none
matmul a=[16,64,49,64] b=[64,64] bias=[64] act=none
matmul a=[16,7,7,3072] b=[3072,768] bias=[768] act=none
matmul a=[16,7,7,768] b=[768,3072] bias=[3072] act=gelu
matmul a=[16,7,7,768] b=[768,3072] bias=[3072] act=none
matmul a=[16,8,128,128] b=[16,8,128,64] act=none
matmul a=[16,8,128,64] b=[16,8,64,128] act=none
matmul a=[16,8,128,64] b=[16,8,64,128] bias=[128] act=none
matmul a=[197,1,768] b=[768,2304] bias=[2304] act=none
matmul a=[197,16,768] b=[768,2304] bias=[2304] act=none
matmul a=[197,768] b=[768,768] bias=[768] act=none
matmul a=[2,2048,512] b=[2,512,1024] act=none
matmul a=[2,2048,768] b=[2,768,768] act=none
matmul a=[2048,49,32] b=[2048,32,49] act=none
matmul a=[2048,49,49] b=[2048,49,32] act=none
matmul a=[256,49,32] b=[256,32,49] act=none
matmul a=[256,49,49] b=[256,49,32] act=none
matmul a=[3152,768] b=[768,768] bias=[768] act=none
matmul a=[32,49,32] b=[32,32,49] act=none
matmul a=[32,49,49] b=[32,49,32] act=none
matmul a=[4,49,384] b=[384,1152] bias=[1152] act=none
matmul a=[4,49,384] b=[384,384] bias=[384] act=none
matmul a=[512,49,32] b=[512,32,49] act=none
matmul a=[512,49,49] b=[512,49,32] act=none
matmul a=[64,49,32] b=[64,32,49] act=none
matmul a=[64,49,49] b=[64,49,32] act=none
matmul a=[64,49,96] b=[96,288] bias=[288] act=none
matmul a=[64,49,96] b=[96,96] bias=[96] act=none
neg x=[1,8,128,32]
neg x=[16,8,128,32]
not x=[1,12,128,128]
not x=[1,8,128,128]
not x=[16,12,128,128]
not x=[16,8,128,128]
pad x=[1,14,7,768] pads=[0,0,0,0,0,0,1,0] value=0
pad x=[1,2048,7,7] pads=[0,0,0,0,0,0,1,0] value=0
pad x=[14,14,3,1] pads=[0,0,0,0,0,0,1,0] value=0
pad x=[16,2048,7,7] pads=[0,0,0,0,0,0,1,0] value=0
pad x=[7,7,3,1] pads=[0,0,0,0,0,0,1,0] value=0
reduce_mean x=[1,128,512] axes=[2] keepdims=1
reduce_mean x=[16,128,512] axes=[2] keepdims=1
relu x=[1,128,2048]
relu x=[16,128,2048]
sigmoid x=[1,1024,1,1]
sigmoid x=[1,128,1,1]
sigmoid x=[1,128,1376]
sigmoid x=[1,16,1,1]
sigmoid x=[1,2048,1,1]
sigmoid x=[1,256,1,1]
sigmoid x=[1,32,1,1]
sigmoid x=[1,512,1,1]
sigmoid x=[1,64,1,1]
sigmoid x=[16,1024,1,1]
sigmoid x=[16,128,1,1]
sigmoid x=[16,128,1376]
sigmoid x=[16,16,1,1]
sigmoid x=[16,2048,1,1]
sigmoid x=[16,256,1,1]
sigmoid x=[16,32,1,1]
sigmoid x=[16,512,1,1]
sigmoid x=[16,64,1,1]
slice x=[1,1,49,1536] starts=[0,0,0,0] ends=[1,1,49,512]
slice x=[1,1,49,1536] starts=[0,0,0,1024] ends=[1,1,49,1536]
slice x=[1,1,49,1536] starts=[0,0,0,512] ends=[1,1,49,1024]
slice x=[1,1024,14,14] starts=[0,0,0,0] ends=[1,1024,7,14]
slice x=[1,1024,14,14] starts=[0,0,7,0] ends=[1,1024,14,14]
slice x=[1,14,14,2,192] starts=[0,0,0,1,0] ends=[1,14,14,2,192]
slice x=[1,14,2,28,192] starts=[0,0,1,0,0] ends=[1,14,2,28,192]
slice x=[1,14,28,192] starts=[0,0,0,0] ends=[1,14,28,192]
slice x=[1,14,8,768] starts=[0,0,0,0] ends=[1,14,4,768]
slice x=[1,14,8,768] starts=[0,0,4,0] ends=[1,14,8,768]
slice x=[1,16,49,384] starts=[0,0,0,0] ends=[1,16,49,128]
slice x=[1,16,49,384] starts=[0,0,0,128] ends=[1,16,49,256]
slice x=[1,16,49,384] starts=[0,0,0,256] ends=[1,16,49,384]
slice x=[1,2048,8,7] starts=[0,0,0,0] ends=[1,2048,4,7]
slice x=[1,2048,8,7] starts=[0,0,0,0] ends=[1,2048,7,7]
slice x=[1,2048,8,7] starts=[0,0,4,0] ends=[1,2048,8,7]
slice x=[1,256,56,56] starts=[0,0,0,0] ends=[1,256,28,56]
slice x=[1,256,56,56] starts=[0,0,28,0] ends=[1,256,56,56]
slice x=[1,28,14,384] starts=[0,0,0,0] ends=[1,28,7,384]
slice x=[1,28,14,384] starts=[0,0,7,0] ends=[1,28,14,384]
slice x=[1,28,2,56,96] starts=[0,0,1,0,0] ends=[1,28,2,56,96]
slice x=[1,28,28,2,96] starts=[0,0,0,1,0] ends=[1,28,28,2,96]
slice x=[1,28,56,96] starts=[0,0,0,0] ends=[1,28,56,96]
slice x=[1,4,49,768] starts=[0,0,0,0] ends=[1,4,49,256]
slice x=[1,4,49,768] starts=[0,0,0,256] ends=[1,4,49,512]
slice x=[1,4,49,768] starts=[0,0,0,512] ends=[1,4,49,768]
slice x=[1,512,28,28] starts=[0,0,0,0] ends=[1,512,14,28]
slice x=[1,512,28,28] starts=[0,0,14,0] ends=[1,512,28,28]
slice x=[1,64,112,112] starts=[0,0,0,0] ends=[1,64,56,112]
slice x=[1,64,112,112] starts=[0,0,56,0] ends=[1,64,112,112]
slice x=[1,64,49,192] starts=[0,0,0,0] ends=[1,64,49,64]
slice x=[1,64,49,192] starts=[0,0,0,128] ends=[1,64,49,192]
slice x=[1,64,49,192] starts=[0,0,0,64] ends=[1,64,49,128]
slice x=[1,7,14,384] starts=[0,0,0,0] ends=[1,7,14,384]
slice x=[1,7,2,14,384] starts=[0,0,1,0,0] ends=[1,7,2,14,384]
slice x=[1,7,7,2,384] starts=[0,0,0,1,0] ends=[1,7,7,2,384]
slice x=[1,7,8,768] starts=[0,0,0,0] ends=[1,7,7,768]
slice x=[1,8,128,64] starts=[0,0,0,0] ends=[1,8,128,32]
slice x=[1,8,128,64] starts=[0,0,0,32] ends=[1,8,128,64]
slice x=[14,14,4,1] starts=[0,0,0,0] ends=[14,14,2,1]
slice x=[14,14,4,1] starts=[0,0,0,0] ends=[14,14,3,1]
slice x=[14,14,4,1] starts=[0,0,2,0] ends=[14,14,4,1]
slice x=[14,28,4,1] starts=[0,0,0,0] ends=[14,28,3,1]
slice x=[15,256,56,56] starts=[0,0,0,0] ends=[1,256,56,56]
slice x=[15,512,28,28] starts=[0,0,0,0] ends=[1,512,28,28]
slice x=[15,64,112,112] starts=[0,0,0,0] ends=[1,64,112,112]
slice x=[16,1,49,1536] starts=[0,0,0,0] ends=[16,1,49,512]
slice x=[16,1,49,1536] starts=[0,0,0,1024] ends=[16,1,49,1536]
slice x=[16,1,49,1536] starts=[0,0,0,512] ends=[16,1,49,1024]
slice x=[16,1024,14,14] starts=[0,0,0,0] ends=[16,1024,7,14]
slice x=[16,1024,14,14] starts=[0,0,7,0] ends=[16,1024,14,14]
slice x=[16,14,14,2,192] starts=[0,0,0,1,0] ends=[16,14,14,2,192]
slice x=[16,14,2,28,192] starts=[0,0,1,0,0] ends=[16,14,2,28,192]
slice x=[16,14,28,192] starts=[0,0,0,0] ends=[16,14,28,192]
slice x=[16,16,49,384] starts=[0,0,0,0] ends=[16,16,49,128]
slice x=[16,16,49,384] starts=[0,0,0,128] ends=[16,16,49,256]
slice x=[16,16,49,384] starts=[0,0,0,256] ends=[16,16,49,384]
slice x=[16,2048,8,7] starts=[0,0,0,0] ends=[16,2048,4,7]
slice x=[16,2048,8,7] starts=[0,0,0,0] ends=[16,2048,7,7]
slice x=[16,2048,8,7] starts=[0,0,4,0] ends=[16,2048,8,7]
slice x=[16,256,56,56] starts=[0,0,0,0] ends=[15,256,56,55]
slice x=[16,256,56,56] starts=[0,0,0,0] ends=[16,256,28,56]
slice x=[16,256,56,56] starts=[0,0,0,54] ends=[15,256,56,56]
slice x=[16,256,56,56] starts=[0,0,28,0] ends=[16,256,56,56]
slice x=[16,256,56,56] starts=[1,0,0,0] ends=[16,256,56,2]
slice x=[16,256,56,56] starts=[1,0,0,1] ends=[16,256,56,56]
slice x=[16,256,56,56] starts=[15,0,0,0] ends=[16,256,56,56]
slice x=[16,28,2,56,96] starts=[0,0,1,0,0] ends=[16,28,2,56,96]
slice x=[16,28,28,2,96] starts=[0,0,0,1,0] ends=[16,28,28,2,96]
slice x=[16,28,56,96] starts=[0,0,0,0] ends=[16,28,56,96]
slice x=[16,4,49,768] starts=[0,0,0,0] ends=[16,4,49,256]
slice x=[16,4,49,768] starts=[0,0,0,256] ends=[16,4,49,512]
slice x=[16,4,49,768] starts=[0,0,0,512] ends=[16,4,49,768]
slice x=[16,512,28,28] starts=[0,0,0,0] ends=[15,512,28,27]
slice x=[16,512,28,28] starts=[0,0,0,0] ends=[16,512,14,28]
slice x=[16,512,28,28] starts=[0,0,0,26] ends=[15,512,28,28]
slice x=[16,512,28,28] starts=[0,0,14,0] ends=[16,512,28,28]
slice x=[16,512,28,28] starts=[1,0,0,0] ends=[16,512,28,2]
slice x=[16,512,28,28] starts=[1,0,0,1] ends=[16,512,28,28]
slice x=[16,512,28,28] starts=[15,0,0,0] ends=[16,512,28,28]
slice x=[16,64,112,112] starts=[0,0,0,0] ends=[15,64,112,111]
slice x=[16,64,112,112] starts=[0,0,0,0] ends=[16,64,56,112]
slice x=[16,64,112,112] starts=[0,0,0,110] ends=[15,64,112,112]
slice x=[16,64,112,112] starts=[0,0,56,0] ends=[16,64,112,112]
slice x=[16,64,112,112] starts=[1,0,0,0] ends=[16,64,112,2]
slice x=[16,64,112,112] starts=[1,0,0,1] ends=[16,64,112,112]
slice x=[16,64,112,112] starts=[15,0,0,0] ends=[16,64,112,112]
slice x=[16,64,49,192] starts=[0,0,0,0] ends=[16,64,49,64]
slice x=[16,64,49,192] starts=[0,0,0,128] ends=[16,64,49,192]
slice x=[16,64,49,192] starts=[0,0,0,64] ends=[16,64,49,128]
slice x=[16,7,14,384] starts=[0,0,0,0] ends=[16,7,14,384]
slice x=[16,7,2,14,384] starts=[0,0,1,0,0] ends=[16,7,2,14,384]
slice x=[16,7,7,2,384] starts=[0,0,0,1,0] ends=[16,7,7,2,384]
slice x=[16,8,128,64] starts=[0,0,0,0] ends=[16,8,128,32]
slice x=[16,8,128,64] starts=[0,0,0,32] ends=[16,8,128,64]
slice x=[7,14,4,1] starts=[0,0,0,0] ends=[7,14,3,1]
slice x=[7,7,4,1] starts=[0,0,0,0] ends=[7,7,2,1]
slice x=[7,7,4,1] starts=[0,0,0,0] ends=[7,7,3,1]
slice x=[7,7,4,1] starts=[0,0,2,0] ends=[7,7,4,1]
smul a=[1,24,49,49] s=[]
smul a=[1,8,128,128] s=[]
smul a=[1024,3,49,49] s=[]
smul a=[16,24,49,49] s=[]
smul a=[16,6,49,49] s=[]
smul a=[16,8,128,128] s=[]
smul a=[256,6,49,49] s=[]
smul a=[4,12,49,49] s=[]
smul a=[64,12,49,49] s=[]
smul a=[64,3,49,49] s=[]
softmax x=[1,1,16,49,49] axis=4
softmax x=[1,16,4,49,49] axis=4
softmax x=[1,4,8,49,49] axis=4
softmax x=[1,64,2,49,49] axis=4
softmax x=[1,8,128,128] axis=3
softmax x=[16,1,16,49,49] axis=4
softmax x=[16,16,4,49,49] axis=4
softmax x=[16,4,8,49,49] axis=4
softmax x=[16,64,2,49,49] axis=4
softmax x=[16,8,128,128] axis=3
split x=[1,128,1024] axis=2 sizes=[512,512]
split x=[1,128,1536] axis=2 sizes=[1024,512]
split x=[1,128,1536] axis=2 sizes=[512,1024]
split x=[1,128,1536] axis=2 sizes=[512,512,512]
split x=[1,128,2048] axis=2 sizes=[1024,1024]
split x=[1,128,2048] axis=2 sizes=[1024,512,512]
split x=[1,128,2048] axis=2 sizes=[512,512,1024]
split x=[1,128,2304] axis=2 sizes=[1536,768]
split x=[1,128,2304] axis=2 sizes=[768,1536]
split x=[1,128,2560] axis=2 sizes=[1024,1536]
split x=[1,128,2560] axis=2 sizes=[1536,1024]
split x=[1,128,2560] axis=2 sizes=[512,512,1536]
split x=[1,128,2560] axis=2 sizes=[512,512,512,512,512]
split x=[1,128,2752] axis=2 sizes=[1376,1376]
split x=[14,14,2,1] axis=0 sizes=[7,7]
split x=[14,7,2,1] axis=0 sizes=[7,7]
split x=[16,128,1024] axis=2 sizes=[512,512]
split x=[16,128,1536] axis=2 sizes=[1024,512]
split x=[16,128,1536] axis=2 sizes=[512,1024]
split x=[16,128,1536] axis=2 sizes=[512,512,512]
split x=[16,128,2048] axis=2 sizes=[1024,1024]
split x=[16,128,2304] axis=2 sizes=[1536,768]
split x=[16,128,2304] axis=2 sizes=[768,1536]
split x=[16,128,2560] axis=2 sizes=[512,512,512,512,512]
split x=[16,128,2752] axis=2 sizes=[1376,1376]
split x=[2,1024,7,14] axis=0 sizes=[1,1]
split x=[2,14,7,384] axis=0 sizes=[1,1]
split x=[2,2048,1024] axis=0 sizes=[1,1]
split x=[2,2048,4,7] axis=0 sizes=[1,1]
split x=[2,2048,768] axis=0 sizes=[1,1]
split x=[2,256,28,56] axis=0 sizes=[1,1]
split x=[2,512,14,28] axis=0 sizes=[1,1]
split x=[2,64,56,112] axis=0 sizes=[1,1]
split x=[2,7,4,768] axis=0 sizes=[1,1]
split x=[28,14,2,1] axis=0 sizes=[14,14]
split x=[28,28,2,1] axis=0 sizes=[14,14]
split x=[32,1024,7,14] axis=0 sizes=[16,16]
split x=[32,2048,4,7] axis=0 sizes=[16,16]
split x=[32,256,28,56] axis=0 sizes=[16,16]
split x=[32,512,14,28] axis=0 sizes=[16,16]
split x=[32,64,56,112] axis=0 sizes=[16,16]
sqrt x=[1,128,1]
sqrt x=[16,128,1]
tanh x=[1,512]
tanh x=[16,512]
transpose x=[1,1,1,7,7,512] perm=[0,5,1,3,2,4]
transpose x=[1,1,16,49,32] perm=[0,1,2,4,3]
transpose x=[1,1,16,49,32] perm=[0,1,3,2,4]
transpose x=[1,1,49,16,32] perm=[0,1,3,2,4]
transpose x=[1,12,197,64] perm=[0,1,3,2]
transpose x=[1,128,4,7,4,7] perm=[0,2,4,3,5,1]
transpose x=[1,128,7,4,7,4] perm=[0,2,4,3,5,1]
transpose x=[1,128,8,64] perm=[0,2,1,3]
transpose x=[1,128,8,64] perm=[0,2,3,1]
transpose x=[1,16,4,49,32] perm=[0,1,2,4,3]
transpose x=[1,16,4,49,32] perm=[0,1,3,2,4]
transpose x=[1,16,49,128] perm=[0,2,1,3]
transpose x=[1,16,49,4,32] perm=[0,1,3,2,4]
transpose x=[1,2,2,7,7,256] perm=[0,5,1,3,2,4]
transpose x=[1,256,2,7,2,7] perm=[0,2,4,3,5,1]
transpose x=[1,256,7,2,7,2] perm=[0,2,4,3,5,1]
transpose x=[1,4,4,7,7,128] perm=[0,5,1,3,2,4]
transpose x=[1,4,49,256] perm=[0,2,1,3]
transpose x=[1,4,49,8,32] perm=[0,1,3,2,4]
transpose x=[1,4,8,49,32] perm=[0,1,2,4,3]
transpose x=[1,4,8,49,32] perm=[0,1,3,2,4]
transpose x=[1,49,16,128] perm=[0,2,1,3]
transpose x=[1,49,4,256] perm=[0,2,1,3]
transpose x=[1,49,64,64] perm=[0,2,1,3]
transpose x=[1,512,1,7,1,7] perm=[0,2,4,3,5,1]
transpose x=[1,512,7,1,7,1] perm=[0,2,4,3,5,1]
transpose x=[1,64,2,49,32] perm=[0,1,2,4,3]
transpose x=[1,64,2,49,32] perm=[0,1,3,2,4]
transpose x=[1,64,49,2,32] perm=[0,1,3,2,4]
transpose x=[1,64,49,64] perm=[0,2,1,3]
transpose x=[1,64,7,8,7,8] perm=[0,2,4,3,5,1]
transpose x=[1,64,8,7,8,7] perm=[0,2,4,3,5,1]
transpose x=[1,7,7,1,1,512] perm=[0,5,1,3,2,4]
transpose x=[1,7,7,2,2,256] perm=[0,5,1,3,2,4]
transpose x=[1,7,7,4,4,128] perm=[0,5,1,3,2,4]
transpose x=[1,7,7,8,8,64] perm=[0,5,1,3,2,4]
transpose x=[1,8,128,64] perm=[0,1,3,2]
transpose x=[1,8,128,64] perm=[0,2,1,3]
transpose x=[1,8,8,7,7,64] perm=[0,5,1,3,2,4]
transpose x=[1024,1,16,1] perm=[2,0,1,3]
transpose x=[1024,14,16,14] perm=[2,0,1,3]
transpose x=[1024,28,16,28] perm=[2,0,1,3]
transpose x=[128,1,16,1] perm=[2,0,1,3]
transpose x=[128,28,16,28] perm=[2,0,1,3]
transpose x=[14,14,3,1] perm=[1,2,0,3]
transpose x=[14,3,14,1] perm=[2,0,1,3]
transpose x=[14,3,7,1] perm=[2,0,1,3]
transpose x=[16,1,1,7,7,512] perm=[0,5,1,3,2,4]
transpose x=[16,1,16,1] perm=[2,0,1,3]
transpose x=[16,1,16,49,32] perm=[0,1,2,4,3]
transpose x=[16,1,16,49,32] perm=[0,1,3,2,4]
transpose x=[16,1,49,16,32] perm=[0,1,3,2,4]
transpose x=[16,1024,1,1] perm=[1,2,0,3]
transpose x=[16,1024,14,14] perm=[1,2,0,3]
transpose x=[16,1152,14,14] perm=[1,2,0,3]
transpose x=[16,12,197,64] perm=[0,1,3,2]
transpose x=[16,128,1,1] perm=[1,2,0,3]
transpose x=[16,128,14,14] perm=[1,2,0,3]
transpose x=[16,128,28,28] perm=[1,2,0,3]
transpose x=[16,128,4,7,4,7] perm=[0,2,4,3,5,1]
transpose x=[16,128,7,4,7,4] perm=[0,2,4,3,5,1]
transpose x=[16,128,8,64] perm=[0,2,1,3]
transpose x=[16,128,8,64] perm=[0,2,3,1]
transpose x=[16,16,1,1] perm=[1,2,0,3]
transpose x=[16,16,4,49,32] perm=[0,1,2,4,3]
transpose x=[16,16,4,49,32] perm=[0,1,3,2,4]
transpose x=[16,16,49,128] perm=[0,2,1,3]
transpose x=[16,16,49,4,32] perm=[0,1,3,2,4]
transpose x=[16,197,2304] perm=[1,0,2]
transpose x=[16,2,2,7,7,256] perm=[0,5,1,3,2,4]
transpose x=[16,2048,1,1] perm=[1,2,0,3]
transpose x=[16,2048,7,7] perm=[1,2,0,3]
transpose x=[16,2304,7,7] perm=[1,2,0,3]
transpose x=[16,256,1,1] perm=[1,2,0,3]
transpose x=[16,256,14,14] perm=[1,2,0,3]
transpose x=[16,256,2,7,2,7] perm=[0,2,4,3,5,1]
transpose x=[16,256,56,56] perm=[1,2,0,3]
transpose x=[16,256,7,2,7,2] perm=[0,2,4,3,5,1]
transpose x=[16,32,1,1] perm=[1,2,0,3]
transpose x=[16,320,56,56] perm=[1,2,0,3]
transpose x=[16,4,4,7,7,128] perm=[0,5,1,3,2,4]
transpose x=[16,4,49,256] perm=[0,2,1,3]
transpose x=[16,4,49,8,32] perm=[0,1,3,2,4]
transpose x=[16,4,8,49,32] perm=[0,1,2,4,3]
transpose x=[16,4,8,49,32] perm=[0,1,3,2,4]
transpose x=[16,49,16,128] perm=[0,2,1,3]
transpose x=[16,49,4,256] perm=[0,2,1,3]
transpose x=[16,49,64,64] perm=[0,2,1,3]
transpose x=[16,512,1,1] perm=[1,2,0,3]
transpose x=[16,512,1,7,1,7] perm=[0,2,4,3,5,1]
transpose x=[16,512,28,28] perm=[1,2,0,3]
transpose x=[16,512,7,1,7,1] perm=[0,2,4,3,5,1]
transpose x=[16,512,7,7] perm=[1,2,0,3]
transpose x=[16,576,28,28] perm=[1,2,0,3]
transpose x=[16,64,1,1] perm=[1,2,0,3]
transpose x=[16,64,112,112] perm=[1,2,0,3]
transpose x=[16,64,2,49,32] perm=[0,1,2,4,3]
transpose x=[16,64,2,49,32] perm=[0,1,3,2,4]
transpose x=[16,64,28,28] perm=[1,2,0,3]
transpose x=[16,64,49,2,32] perm=[0,1,3,2,4]
transpose x=[16,64,49,64] perm=[0,2,1,3]
transpose x=[16,64,56,56] perm=[1,2,0,3]
transpose x=[16,64,7,8,7,8] perm=[0,2,4,3,5,1]
transpose x=[16,64,8,7,8,7] perm=[0,2,4,3,5,1]
transpose x=[16,7,7,1,1,512] perm=[0,5,1,3,2,4]
transpose x=[16,7,7,2,2,256] perm=[0,5,1,3,2,4]
transpose x=[16,7,7,4,4,128] perm=[0,5,1,3,2,4]
transpose x=[16,7,7,8,8,64] perm=[0,5,1,3,2,4]
transpose x=[16,8,128,64] perm=[0,1,3,2]
transpose x=[16,8,128,64] perm=[0,2,1,3]
transpose x=[16,8,8,7,7,64] perm=[0,5,1,3,2,4]
transpose x=[2048,1,16,1] perm=[2,0,1,3]
transpose x=[2048,14,16,14] perm=[2,0,1,3]
transpose x=[2048,7,16,7] perm=[2,0,1,3]
transpose x=[256,1,16,1] perm=[2,0,1,3]
transpose x=[256,112,16,112] perm=[2,0,1,3]
transpose x=[256,14,16,14] perm=[2,0,1,3]
transpose x=[256,56,16,56] perm=[2,0,1,3]
transpose x=[28,3,14,1] perm=[2,0,1,3]
transpose x=[32,1,16,1] perm=[2,0,1,3]
transpose x=[512,1,16,1] perm=[2,0,1,3]
transpose x=[512,28,16,28] perm=[2,0,1,3]
transpose x=[512,56,16,56] perm=[2,0,1,3]
transpose x=[512,7,16,7] perm=[2,0,1,3]
transpose x=[64,1,16,1] perm=[2,0,1,3]
transpose x=[64,112,16,112] perm=[2,0,1,3]
transpose x=[64,56,16,56] perm=[2,0,1,3]
transpose x=[7,3,7,1] perm=[2,0,1,3]
transpose x=[7,7,3,1] perm=[1,2,0,3]
where cond=[1,1,128,128] a=[1,8,128,128] b=[]
where cond=[1,1,128,128] a=[1] b=[1]
where cond=[1,12,128,128] a=[1] b=[1,12,128,128]
where cond=[1,8,128,128] a=[1] b=[1,8,128,128]
where cond=[16,1,128,128] a=[1,8,128,128] b=[]
where cond=[16,1,128,128] a=[1] b=[1]
where cond=[16,12,128,128] a=[1] b=[16,12,128,128]
where cond=[16,8,128,128] a=[1] b=[16,8,128,128]
