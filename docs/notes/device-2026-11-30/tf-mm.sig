# superopt signatures v1
# matmul and attention of the seven transformers, optimize --emit-signatures, default and none
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
